package checker

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestHistoryRoundTrip checks Save then Load gives back the same history.
func TestHistoryRoundTrip(t *testing.T) {
	h := cleanHistory()
	dir := t.TempDir()
	if _, err := h.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, h)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Load of a missing dir succeeded")
	}
}
