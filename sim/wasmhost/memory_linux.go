package wasmhost

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory is a guest's memory in one address range reserved up front
// for the module's maximum size and made accessible as the guest grows it.
// wazero's default appends to a Go slice instead: each memory.grow of a Go
// guest copied the whole heap so far into a new, freshly zeroed slice and
// left the old one to the host's collector. Here growing copies nothing and
// the kernel zeroes each page once, on first touch.
type linearMemory struct {
	reserved   []byte
	accessible int // bytes made readable and writable so far
}

// newLinearMemory returns an allocator reserving maxBytes of address space
// per memory: 4 GiB for a Go guest, which declares no maximum, but address
// space only; untouched pages cost nothing. Where the reservation fails
// (an address-space limit), the memory grows by copying, as by default.
func newLinearMemory() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, maxBytes uint64) experimental.LinearMemory {
		b, err := syscall.Mmap(-1, 0, int(maxBytes), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			return &sliceMemory{}
		}
		return &linearMemory{reserved: b}
	})
}

// Reallocate implements experimental.LinearMemory: the address never
// changes, so growing is one mprotect of the new pages. nil (the guest's
// memory.grow fails) when the system refuses the memory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.reserved)) {
		return nil
	}
	if n := int(size); n > m.accessible {
		// mprotect takes whole pages; wasm sizes are whole 64 KiB pages anyway.
		page := syscall.Getpagesize()
		n = min((n+page-1)/page*page, len(m.reserved))
		if err := syscall.Mprotect(m.reserved[m.accessible:n], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.accessible = n
	}
	return m.reserved[:size:size]
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	if m.reserved != nil {
		_ = syscall.Munmap(m.reserved)
		m.reserved = nil
	}
}

// sliceMemory is wazero's default growth (append to a Go slice, copying),
// for when the address space cannot be reserved.
type sliceMemory struct{ buf []byte }

// Reallocate implements experimental.LinearMemory.
func (m *sliceMemory) Reallocate(size uint64) []byte {
	if n := int(size); n > len(m.buf) {
		m.buf = append(m.buf, make([]byte, n-len(m.buf))...)
	}
	return m.buf[:size]
}

// Free implements experimental.LinearMemory.
func (m *sliceMemory) Free() { m.buf = nil }
