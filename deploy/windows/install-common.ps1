<#
.SYNOPSIS
  The steps install-agent.ps1 and install-collector.ps1 share; both dot-source this file from
  the unpacked zip's directory. Not run on its own.

.DESCRIPTION
  Assert-PwElevated      throws unless PowerShell runs elevated (Administrator)
  Remove-PwService       the program's own "uninstall --name SERVICE" (stop and delete)
  Copy-PwProgram         the zip's bin\* into the install directory
  Initialize-PwConfig    the configuration from the zip's example when there is none, and its
                         directory readable by SYSTEM and Administrators only (checked)
  Test-PwConfig          the program's --check-config of the configuration
  Install-PwService      the program's own "install --config FILE --name SERVICE", then start
  Each throws on a failure (the callers set $ErrorActionPreference = 'Stop').
#>

function Assert-PwElevated {
  $admin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()
           ).IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
  if (-not $admin) { throw 'Run this script from an elevated (Administrator) PowerShell.' }
}

# "poolwatch-agent" for ...\poolwatch-agent.exe: the name the messages give.
function Get-PwProgramName([string]$Exe) {
  [IO.Path]::GetFileNameWithoutExtension($Exe)
}

function Remove-PwService([string]$Exe, [string]$ServiceName) {
  if (Test-Path $Exe) {
    & $Exe uninstall --name $ServiceName
    if ($LASTEXITCODE -ne 0) { throw "$(Get-PwProgramName $Exe) uninstall failed ($LASTEXITCODE)" }
  }
}

function Copy-PwProgram([string]$Here, [string]$InstallDir) {
  New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
  Copy-Item -Force (Join-Path $Here 'bin\*') $InstallDir
}

# $Example: the file under the zip's config\; $Hint: what to edit in the new configuration.
function Initialize-PwConfig([string]$Here, [string]$ConfigFile, [string]$Example, [string]$Hint) {
  $confDir = Split-Path -Parent $ConfigFile
  New-Item -ItemType Directory -Force -Path $confDir | Out-Null
  if (-not (Test-Path $ConfigFile)) {
    Copy-Item (Join-Path $Here "config\$Example") $ConfigFile
    Write-Host "Wrote $ConfigFile from the example: $Hint"
  }
  # The configuration holds the path of a private key (and the collector's store the fleet's
  # history): only SYSTEM (the services' account) and Administrators may read the directory.
  # By SID (S-1-5-18 LocalSystem, S-1-5-32-544 BUILTIN\Administrators): the group's name is
  # translated on non-English Windows ("Administratoren", "Administrateurs"), and icacls fails
  # on a name it does not know. The result is checked: a directory left open must not pass
  # silently.
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
}

function Test-PwConfig([string]$Exe, [string]$ConfigFile) {
  & $Exe --check-config --config $ConfigFile | Out-Null
  if ($LASTEXITCODE -ne 0) {
    throw "$ConfigFile does not check out ($(Get-PwProgramName $Exe) --check-config)"
  }
}

function Install-PwService([string]$Exe, [string]$ConfigFile, [string]$ServiceName, [bool]$Start) {
  & $Exe install --config $ConfigFile --name $ServiceName
  if ($LASTEXITCODE -ne 0) { throw "$(Get-PwProgramName $Exe) install failed ($LASTEXITCODE)" }
  if ($Start) {
    Start-Service -Name $ServiceName
    Get-Service -Name $ServiceName
  }
}
