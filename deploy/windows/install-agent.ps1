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
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
. (Join-Path $here 'install-common.ps1')
$exe = Join-Path $InstallDir 'poolwatch-agent.exe'

Assert-PwElevated

if ($Uninstall) {
  Remove-PwService $exe $ServiceName
  Remove-Item -Recurse -Force $InstallDir -ErrorAction SilentlyContinue
  Write-Host "Removed $InstallDir. The configuration, spool and log in" `
             "$(Split-Path $ConfigFile) are kept; delete them by hand if wanted."
  exit 0
}

Copy-PwProgram $here $InstallDir
Initialize-PwConfig $here $ConfigFile 'agent.conf.example' `
  'set the collector endpoints and certificates.'
Test-PwConfig $exe $ConfigFile
Install-PwService $exe $ConfigFile $ServiceName (-not $NoStart)
