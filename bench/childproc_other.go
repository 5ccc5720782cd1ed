//go:build !linux

package bench

import "syscall"

// childSysProcAttr: without Pdeathsig, children rely on Stop alone.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
