//go:build !linux

package wasmhost

import "github.com/tetratelabs/wazero/experimental"

// newLinearMemory: only Linux reserves address space here; elsewhere
// wazero's default growth is used.
func newLinearMemory() experimental.MemoryAllocator { return nil }
