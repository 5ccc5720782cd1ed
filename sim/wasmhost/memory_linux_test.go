package wasmhost

import (
	"testing"
	"unsafe"
)

// TestLinearMemoryGrowsInPlace: goal — growing a guest's memory keeps its
// contents and address, gives zeroed new pages, and refuses to pass the
// maximum. Method: grow a reserved memory three times, writing at each end.
func TestLinearMemoryGrowsInPlace(t *testing.T) {
	const page = 64 << 10
	mem := newLinearMemory().Allocate(0, 64*page)
	defer mem.Free()
	if _, ok := mem.(*linearMemory); !ok {
		t.Skipf("address space not reserved here (%T)", mem)
	}
	b := mem.Reallocate(page)
	if len(b) != page {
		t.Fatalf("len %d, want %d", len(b), page)
	}
	base := unsafe.SliceData(b)
	b[0], b[page-1] = 1, 2
	for _, size := range []int{page + 1, 3 * page, 64 * page} {
		b = mem.Reallocate(uint64(size))
		if len(b) != size || unsafe.SliceData(b) != base {
			t.Fatalf("grown to %d: len %d, moved %t", size, len(b), unsafe.SliceData(b) != base)
		}
		if b[0] != 1 || b[page-1] != 2 {
			t.Fatalf("grown to %d: lost the contents", size)
		}
		for i := page; i < size; i += 4096 {
			if b[i] != 0 {
				t.Fatalf("grown to %d: byte %d is %d, want 0", size, i, b[i])
			}
		}
		b[size-1] = 3 // writable to the end
		b[size-1] = 0
	}
	if b := mem.Reallocate(64*page + 1); b != nil {
		t.Errorf("grew past the maximum to %d bytes", len(b))
	}
}

// TestSliceMemoryGrows: goal — the fallback for when no address space can
// be reserved keeps the contents and zeroes what it adds. Method: grow it
// twice, writing at each end.
func TestSliceMemoryGrows(t *testing.T) {
	var mem sliceMemory
	b := mem.Reallocate(16)
	b[15] = 7
	b = mem.Reallocate(64)
	if len(b) != 64 || b[15] != 7 || b[16] != 0 || b[63] != 0 {
		t.Fatalf("grown to 64: len %d, kept %d, new bytes %d %d", len(b), b[15], b[16], b[63])
	}
	if b = mem.Reallocate(32); len(b) != 32 || b[15] != 7 {
		t.Fatalf("asked for 32: len %d, kept %d", len(b), b[15])
	}
}
