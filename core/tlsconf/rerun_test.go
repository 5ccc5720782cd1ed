package tlsconf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIssueKeepsWhatIsThere: goal — Issue run again keeps every file
// already there (reporting it kept) and makes only what is missing,
// where it used to fail "file exists"; half a pair, or a certificate
// another CA signed, is refused naming the files, since the cluster could
// not use it. Method: issue into a directory; issue again with one more
// name and compare the files; then remove one file of a pair, and copy in
// another CA's certificate.
func TestIssueKeepsWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	plan := Plan{Dir: dir, Nodes: []string{"n1"}, Clients: []string{"app"}, Validity: time.Hour}
	first, err := Issue(plan)
	if err != nil {
		t.Fatal(err)
	}
	if first.CAKept || first.Nodes["n1"].Kept || first.Clients["app"].Kept {
		t.Fatalf("first run kept files it made: %+v", first)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := map[string][]byte{}
	for _, f := range []string{CAFile, CAKeyFile, "n1.pem", "n1-key.pem", "app.pem", "app-key.pem"} {
		before[f] = read(f)
	}
	plan.Nodes = []string{"n1", "n2"}
	again, err := Issue(plan)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !again.CAKept || !again.Nodes["n1"].Kept || !again.Clients["app"].Kept || again.Nodes["n2"].Kept {
		t.Fatalf("second run: %+v, want CA, n1 and app kept, n2 made", again)
	}
	for f, b := range before {
		if !bytes.Equal(read(f), b) {
			t.Errorf("second run rewrote %s", f)
		}
	}
	if _, err := LoadCert(again.Nodes["n2"].Cert, again.Nodes["n2"].Key); err != nil {
		t.Fatalf("n2 made on the second run: %v", err)
	}

	if err := os.Remove(filepath.Join(dir, "app-key.pem")); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(plan); err == nil || !strings.Contains(err.Error(), "app.pem exists but") || !strings.Contains(err.Error(), "app-key.pem does not") {
		t.Errorf("a certificate without its key: %v, want an error naming both files", err)
	}
	plan.Clients = nil

	other, err := Issue(Plan{Dir: t.TempDir(), Nodes: []string{"n3"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{other.Nodes["n3"].Cert, other.Nodes["n3"].Key} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plan.Nodes = []string{"n3"}
	if _, err := Issue(plan); err == nil || !strings.Contains(err.Error(), "not signed by this CA") {
		t.Errorf("another CA's certificate: %v, want not signed by this CA", err)
	}
}
