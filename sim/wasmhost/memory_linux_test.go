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
