package bench

import "syscall"

// childSysProcAttr makes the kernel SIGKILL a child server when the bench
// exits without running its cleanup (crash, SIGKILL), so no server outlives it.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
