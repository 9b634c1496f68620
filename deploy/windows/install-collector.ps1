<#
.SYNOPSIS
  Installs (or removes) the poolwatch collector as a Windows service from the unpacked .zip.

.DESCRIPTION
  Copies bin\poolwatch-collector.exe and bin\poolwatch.exe to $InstallDir, puts the example
  configuration at $ConfigFile when none exists there yet, opens the agents' port in Windows
  Firewall (inbound TCP $AgentPort; the API and dashboard listen on 127.0.0.1:7443 by default and
  need no rule), registers the service with "poolwatch-collector.exe install" and starts it. Run
  from an elevated PowerShell in the unpacked zip's directory. Edit the configuration first
  ([agents] ca_file, cert_file, key_file; [http] tokens_file; see doc\windows.md, "Run the
  collector on Windows"), or pass -NoStart and start it later with Start-Service.

  The store is %ProgramData%\poolwatch\poolwatch.db and the service's log
  %ProgramData%\poolwatch\collector.log.

.EXAMPLE
  .\install-collector.ps1
  .\install-collector.ps1 -ConfigFile D:\poolwatch\collector.conf -AgentPort 7070 -NoStart
  .\install-collector.ps1 -Uninstall
#>
param(
  [string]$InstallDir = (Join-Path $env:ProgramFiles 'poolwatch'),
  [string]$ConfigFile = (Join-Path $env:ProgramData 'poolwatch\collector.conf'),
  [string]$ServiceName = 'poolwatch-collector',
  [int]$AgentPort = 7070,
  [switch]$NoStart,
  [switch]$Uninstall
)
$ErrorActionPreference = 'Stop'
$exe = Join-Path $InstallDir 'poolwatch-collector.exe'
$rule = "poolwatch collector (agents, TCP $AgentPort)"

$admin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()
         ).IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
if (-not $admin) { throw 'Run this script from an elevated (Administrator) PowerShell.' }

if ($Uninstall) {
  if (Test-Path $exe) {
    & $exe uninstall --name $ServiceName
    if ($LASTEXITCODE -ne 0) { throw "poolwatch-collector uninstall failed ($LASTEXITCODE)" }
  }
  Remove-NetFirewallRule -DisplayName $rule -ErrorAction SilentlyContinue
  Remove-Item -Force (Join-Path $InstallDir 'poolwatch-collector.exe') -ErrorAction SilentlyContinue
  Write-Host "Removed the service and the firewall rule. The configuration, store and log in" `
             "$(Split-Path $ConfigFile) are kept; delete them by hand if wanted."
  exit 0
}

$here = Split-Path -Parent $MyInvocation.MyCommand.Path
New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
Copy-Item -Force (Join-Path $here 'bin\*') $InstallDir

$confDir = Split-Path -Parent $ConfigFile
New-Item -ItemType Directory -Force -Path $confDir | Out-Null
if (-not (Test-Path $ConfigFile)) {
  Copy-Item (Join-Path $here 'config\collector.conf.example') $ConfigFile
  Write-Host "Wrote $ConfigFile from the example: set the certificates and the tokens file."
}
# The configuration names a private key and the store holds the fleet's history: only SYSTEM
# (the service's account) and Administrators may read the directory.
icacls $confDir /inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F' | Out-Null

& $exe --check-config --config $ConfigFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw "$ConfigFile does not check out (poolwatch-collector --check-config)" }

if (-not (Get-NetFirewallRule -DisplayName $rule -ErrorAction SilentlyContinue)) {
  New-NetFirewallRule -DisplayName $rule -Direction Inbound -Protocol TCP -LocalPort $AgentPort `
    -Program $exe -Action Allow | Out-Null
}
& $exe install --config $ConfigFile --name $ServiceName
if ($LASTEXITCODE -ne 0) { throw "poolwatch-collector install failed ($LASTEXITCODE)" }
if (-not $NoStart) {
  Start-Service -Name $ServiceName
  Get-Service -Name $ServiceName
}
