<#
.SYNOPSIS
  Installs (or removes) the poolwatch agent as a Windows service from the unpacked .zip.

.DESCRIPTION
  Copies bin\poolwatch-agent.exe to $InstallDir, puts the example configuration at
  $ConfigFile when no configuration exists there yet, registers the service with
  "poolwatch-agent.exe install" and starts it. Run from an elevated PowerShell in the unpacked
  zip's directory. Edit the configuration first ([collector] endpoints, ca_file, cert_file,
  key_file; see doc\windows.md), or pass -NoStart and start it later with Start-Service.

  The agent logs to %ProgramData%\poolwatch\agent.log when run as a service.

.EXAMPLE
  .\install-agent.ps1
  .\install-agent.ps1 -ConfigFile D:\poolwatch\agent.conf -NoStart
  .\install-agent.ps1 -Uninstall
#>
param(
  [string]$InstallDir = (Join-Path $env:ProgramFiles 'poolwatch'),
  [string]$ConfigFile = (Join-Path $env:ProgramData 'poolwatch\agent.conf'),
  [string]$ServiceName = 'poolwatch-agent',
  [switch]$NoStart,
  [switch]$Uninstall
)
$ErrorActionPreference = 'Stop'
$exe = Join-Path $InstallDir 'poolwatch-agent.exe'

$admin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()
         ).IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
if (-not $admin) { throw 'Run this script from an elevated (Administrator) PowerShell.' }

if ($Uninstall) {
  if (Test-Path $exe) {
    & $exe uninstall --name $ServiceName
    if ($LASTEXITCODE -ne 0) { throw "poolwatch-agent uninstall failed ($LASTEXITCODE)" }
  }
  Remove-Item -Recurse -Force $InstallDir -ErrorAction SilentlyContinue
  Write-Host "Removed $InstallDir. The configuration, spool and log in" `
             "$(Split-Path $ConfigFile) are kept; delete them by hand if wanted."
  exit 0
}

$here = Split-Path -Parent $MyInvocation.MyCommand.Path
New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
Copy-Item -Force (Join-Path $here 'bin\*') $InstallDir

$confDir = Split-Path -Parent $ConfigFile
New-Item -ItemType Directory -Force -Path $confDir | Out-Null
if (-not (Test-Path $ConfigFile)) {
  Copy-Item (Join-Path $here 'config\agent.conf.example') $ConfigFile
  Write-Host "Wrote $ConfigFile from the example: set the collector endpoints and certificates."
}
# The configuration holds the path of a private key: only SYSTEM and Administrators may read it.
# By SID (S-1-5-18 LocalSystem, S-1-5-32-544 BUILTIN\Administrators): the group's name is
# translated on non-English Windows ("Administratoren", "Administrateurs"), and icacls fails on
# a name it does not know. The result is checked: a directory left open must not pass silently.
$sidSystem = 'S-1-5-18'
$sidAdmins = 'S-1-5-32-544'
$out = icacls $confDir /inheritance:r /grant:r "*${sidSystem}:(OI)(CI)F" "*${sidAdmins}:(OI)(CI)F" 2>&1
if ($LASTEXITCODE -ne 0) { throw "icacls could not restrict ${confDir} ($LASTEXITCODE): $out" }
$granted = (Get-Acl $confDir).Access | ForEach-Object {
  $_.IdentityReference.Translate([Security.Principal.SecurityIdentifier]).Value
} | Sort-Object -Unique
if (($granted -join ',') -ne "$sidSystem,$sidAdmins") {
  throw "${confDir}: access is granted to $($granted -join ', '), not only to SYSTEM and Administrators"
}

& $exe --check-config --config $ConfigFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw "$ConfigFile does not check out (poolwatch-agent --check-config)" }

& $exe install --config $ConfigFile --name $ServiceName
if ($LASTEXITCODE -ne 0) { throw "poolwatch-agent install failed ($LASTEXITCODE)" }
if (-not $NoStart) {
  Start-Service -Name $ServiceName
  Get-Service -Name $ServiceName
}
