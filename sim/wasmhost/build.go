package wasmhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildOptions say which Go command to build for wasip1.
type BuildOptions struct {
	// Dir is inside the main module; Package is relative to it ("./cmd/x").
	Dir     string
	Package string
	Tags    []string
	// CacheDir keeps one module per source hash.
	CacheDir string
	// Log receives one line when a build runs (it takes seconds); may be nil.
	Log io.Writer
}

// Build returns a wasip1 build of the package, reusing a cached one when
// no source file of the main module it depends on, go.mod, go.sum, the tags
// or the Go version changed. Dependencies outside the main module are
// fixed by go.sum, so their files are not read.
func Build(ctx context.Context, opts BuildOptions) (string, error) {
	key, err := sourceKey(ctx, opts)
	if err != nil {
		return "", err
	}
	name := strings.ReplaceAll(strings.Trim(opts.Package, "./"), "/", "-")
	path := filepath.Join(opts.CacheDir, fmt.Sprintf("%s-%s.wasm", name, key[:16]))
	if _, err := os.Stat(path); err == nil {
		touch(path)
		return path, nil
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return "", fmt.Errorf("wasmhost: build cache: %w", err)
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "wasmhost: building %s for wasip1 into %s\n", opts.Package, path)
	}
	// Build beside the target and rename: a concurrent reader never sees
	// half a module.
	tmp, err := os.CreateTemp(opts.CacheDir, name+"-*.tmp")
	if err != nil {
		return "", fmt.Errorf("wasmhost: build: %w", err)
	}
	_ = tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-trimpath", "-o", tmp.Name()}
	if len(opts.Tags) > 0 {
		args = append(args, "-tags", strings.Join(opts.Tags, ","))
	}
	if out, err := goCommand(ctx, opts.Dir, append(args, opts.Package)...); err != nil {
		return "", fmt.Errorf("wasmhost: go build %s for wasip1: %w\n%s", opts.Package, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("wasmhost: build: %w", err)
	}
	prune(opts.CacheDir, name+"-*.wasm")
	return path, nil
}

// sourceKey hashes what the build depends on within the main module.
func sourceKey(ctx context.Context, opts BuildOptions) (string, error) {
	const format = `{{if and .Module .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}`
	args := []string{"list", "-deps", "-f", format}
	if len(opts.Tags) > 0 {
		args = append(args, "-tags", strings.Join(opts.Tags, ","))
	}
	listed, err := goCommand(ctx, opts.Dir, append(args, opts.Package)...)
	if err != nil {
		return "", fmt.Errorf("wasmhost: go list %s: %w\n%s", opts.Package, err, listed)
	}
	version, err := goCommand(ctx, opts.Dir, "env", "GOVERSION", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("wasmhost: go env: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\ntags=%s\n", version, strings.Join(opts.Tags, ","))
	gomod := strings.TrimSpace(strings.Split(string(version), "\n")[1])
	files := []string{gomod, strings.TrimSuffix(gomod, ".mod") + ".sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		fields := strings.Fields(line)
		for _, f := range fields[min(1, len(fields)):] {
			files = append(files, filepath.Join(fields[0], f))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("wasmhost: source key: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goCommand runs the go tool for GOOS=wasip1 GOARCH=wasm in dir and returns
// its standard output, or its standard error with the error.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var out, diag bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &diag
	if err := cmd.Run(); err != nil {
		return diag.Bytes(), err
	}
	return out.Bytes(), nil
}
