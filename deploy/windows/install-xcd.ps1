# Keeps xcd running on Windows: a scheduled task that starts it at log-on for this user (the GPU
# is theirs), restarted when it fails, with XC_PAR_SECRET in the user's environment, and the
# firewall rule from the tutorial. Run from the unpacked archive's folder, in an elevated
# PowerShell (the firewall rule needs an administrator; the task is registered for the user
# named by -User, by default the one running this):
#
#   .\install-xcd.ps1 -Secret "correct-horse-battery"            # install and start
#   .\install-xcd.ps1 -Remove                                     # stop and remove both
#
# The daemon's key and certificate live in %USERPROFILE%\.xcc\xcd and survive reinstalls, so
# programs' pins hold. See docs/operations.md.
param(
    [string]$Secret,
    [int]$Port = 7227,
    [string]$User = "$env:USERDOMAIN\$env:USERNAME",
    [string]$Exe = (Join-Path $PSScriptRoot "bin\xcd.exe"),
    [switch]$Remove
)
$ErrorActionPreference = "Stop"
$TaskName = "xcd"
$RuleName = "xcd"

if ($Remove) {
    Stop-ScheduledTask -TaskName $TaskName -ErrorAction SilentlyContinue
    Unregister-ScheduledTask -TaskName $TaskName -Confirm:$false -ErrorAction SilentlyContinue
    Remove-NetFirewallRule -DisplayName $RuleName -ErrorAction SilentlyContinue
    Write-Host "xcd: scheduled task and firewall rule removed"
    exit 0
}
if (-not (Test-Path $Exe)) { throw "no xcd.exe at ${Exe}: run this from the unpacked xcd-win64 folder, or give -Exe" }
if (-not $Secret) { throw "give the daemon a secret: -Secret <secret> (programs set the same XC_PAR_SECRET)" }

# The secret in the user's environment (HKCU\Environment), which the task inherits.
[Environment]::SetEnvironmentVariable("XC_PAR_SECRET", $Secret, "User")

$action = New-ScheduledTaskAction -Execute $Exe -Argument "-port $Port"
$trigger = New-ScheduledTaskTrigger -AtLogOn -User $User
$settings = New-ScheduledTaskSettingsSet -RestartCount 999 -RestartInterval (New-TimeSpan -Minutes 1) `
    -ExecutionTimeLimit ([TimeSpan]::Zero) -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries `
    -MultipleInstances IgnoreNew
$principal = New-ScheduledTaskPrincipal -UserId $User -LogonType Interactive -RunLevel Limited
Register-ScheduledTask -TaskName $TaskName -Action $action -Trigger $trigger -Settings $settings `
    -Principal $principal -Description "xcd: serves this machine's GPUs to programs on other machines" -Force | Out-Null

# The tutorial's rule, limited to this program.
Remove-NetFirewallRule -DisplayName $RuleName -ErrorAction SilentlyContinue
New-NetFirewallRule -DisplayName $RuleName -Direction Inbound -Protocol TCP -LocalPort $Port -Action Allow `
    -Program $Exe | Out-Null

Start-ScheduledTask -TaskName $TaskName
Write-Host "xcd: started as scheduled task '$TaskName' for $User on port $Port; firewall rule '$RuleName' added"
