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
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
. (Join-Path $here 'install-common.ps1')
$exe = Join-Path $InstallDir 'poolwatch-collector.exe'
$rule = "poolwatch collector (agents, TCP $AgentPort)"

Assert-PwElevated

if ($Uninstall) {
  Remove-PwService $exe $ServiceName
  Remove-NetFirewallRule -DisplayName $rule -ErrorAction SilentlyContinue
  Remove-Item -Force (Join-Path $InstallDir 'poolwatch-collector.exe') -ErrorAction SilentlyContinue
  Write-Host "Removed the service and the firewall rule. The configuration, store and log in" `
             "$(Split-Path $ConfigFile) are kept; delete them by hand if wanted."
  exit 0
}

Copy-PwProgram $here $InstallDir
Initialize-PwConfig $here $ConfigFile 'collector.conf.example' `
  'set the certificates and the tokens file.'
Test-PwConfig $exe $ConfigFile
if (-not (Get-NetFirewallRule -DisplayName $rule -ErrorAction SilentlyContinue)) {
  New-NetFirewallRule -DisplayName $rule -Direction Inbound -Protocol TCP -LocalPort $AgentPort `
    -Program $exe -Action Allow | Out-Null
}
Install-PwService $exe $ConfigFile $ServiceName (-not $NoStart)
