package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// Plan is what Issue writes: a CA (kept if Dir already holds one), a
// certificate per node (serving and client use: members dial each
// other), per gateway (serving only) and per client (client use only).
// The usages keep each on its side: only a node certificate is accepted
// on the member port (PeerServer).
type Plan struct {
	Dir      string
	Nodes    []string
	Gateways []string
	Clients  []string
	// Hosts are extra names or IPs every node and gateway certificate is
	// valid for, besides localhost, 127.0.0.1, ::1 and its own name.
	Hosts []string
	// Validity of the node and client certificates (the CA gets ten
	// times as long).
	Validity time.Duration
}

// Issued names the files of p: those Issue wrote and those it kept.
type Issued struct {
	CA string
	// CAKept: the directory already held the CA, which signed the rest.
	CAKept   bool
	Nodes    map[string]Pair
	Gateways map[string]Pair
	Clients  map[string]Pair
}

// Pair is a certificate file and its key file.
type Pair struct {
	Cert, Key string
	// Kept: both files were already there, signed by the CA, and were
	// left as they are (names and validity included).
	Kept bool
}

// File names in a certificate directory.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// validName keeps names usable as file names and DNS labels.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Issue makes p's CA and certificates (ECDSA P-256); keys are written 0600.
// What the directory already holds is kept, never overwritten, so a second
// run with the same plan changes nothing and one with more names adds
// them: the CA when ca.pem and ca-key.pem are both there, a certificate
// when its two files are and the CA signed it. Half a pair, or a
// certificate another CA signed, is an error naming the files.
func Issue(p Plan) (Issued, error) {
	if p.Validity <= 0 {
		return Issued{}, errors.New("certs: validity must be > 0")
	}
	seen := map[string]bool{CAFile: true, "ca": true}
	for _, n := range slices.Concat(p.Nodes, p.Gateways, p.Clients) {
		if !validName.MatchString(n) {
			return Issued{}, fmt.Errorf("certs: name %q: use letters, digits, '.', '_' and '-'", n)
		}
		if seen[n] {
			return Issued{}, fmt.Errorf("certs: name %q given twice (node and client names share the directory)", n)
		}
		seen[n] = true
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return Issued{}, fmt.Errorf("certs: %w", err)
	}
	ca, caKey, caKept, err := loadOrMakeCA(p.Dir, 10*p.Validity)
	if err != nil {
		return Issued{}, err
	}
	out := Issued{CA: filepath.Join(p.Dir, CAFile), CAKept: caKept,
		Nodes: map[string]Pair{}, Gateways: map[string]Pair{}, Clients: map[string]Pair{}}
	for _, n := range p.Nodes {
		tmpl := leafTemplate(n, p.Validity, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		addHosts(tmpl, n, p.Hosts)
		if out.Nodes[n], err = writeLeaf(p.Dir, n, tmpl, ca, caKey); err != nil {
			return Issued{}, err
		}
	}
	for _, n := range p.Gateways {
		tmpl := leafTemplate(n, p.Validity, x509.ExtKeyUsageServerAuth)
		addHosts(tmpl, n, p.Hosts)
		if out.Gateways[n], err = writeLeaf(p.Dir, n, tmpl, ca, caKey); err != nil {
			return Issued{}, err
		}
	}
	for _, n := range p.Clients {
		tmpl := leafTemplate(n, p.Validity, x509.ExtKeyUsageClientAuth)
		if out.Clients[n], err = writeLeaf(p.Dir, n, tmpl, ca, caKey); err != nil {
			return Issued{}, err
		}
	}
	return out, nil
}

// loadOrMakeCA reuses dir's CA (to add certificates later; kept true) or
// makes one.
func loadOrMakeCA(dir string, validity time.Duration) (ca *x509.Certificate, key *ecdsa.PrivateKey, kept bool, err error) {
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	found, err := existingPair(certPath, keyPath, "a new CA (every certificate it signed must then be made again)")
	if err != nil {
		return nil, nil, false, err
	}
	if found {
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, nil, false, fmt.Errorf("certs: existing CA: %w", err)
		}
		key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
		if !ok {
			return nil, nil, false, fmt.Errorf("certs: %s is not an ECDSA key", keyPath)
		}
		return pair.Leaf, key, true, nil
	}
	ca, key, err = makeCA(certPath, keyPath, validity)
	return ca, key, false, err
}

// existingPair reports whether both files of a certificate and its key
// exist; exactly one is an error saying how to get a new pair (what).
func existingPair(certPath, keyPath, what string) (bool, error) {
	certThere, err := exists(certPath)
	if err != nil {
		return false, err
	}
	keyThere, err := exists(keyPath)
	if err != nil {
		return false, err
	}
	if certThere != keyThere {
		there, missing := certPath, keyPath
		if keyThere {
			there, missing = keyPath, certPath
		}
		return false, fmt.Errorf("certs: %s exists but %s does not: restore it, or remove %s to make %s", there, missing, there, what)
	}
	return certThere, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("certs: %w", err)
}

// makeCA writes a new self-signed CA.
func makeCA(certPath, keyPath string, validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "lockstep CA", Organization: []string{"lockstep"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: CA: %w", err)
	}
	if err := writeKeyAndCert(keyPath, certPath, key, der); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: CA: %w", err)
	}
	return ca, key, nil
}

// addHosts makes a serving certificate valid for loopback, its own name
// and hosts.
func addHosts(tmpl *x509.Certificate, name string, hosts []string) {
	tmpl.DNSNames = []string{"localhost", name}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

func leafTemplate(name string, validity time.Duration, usage ...x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"lockstep"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
}

// writeLeaf makes name's certificate and key, or keeps them when both are
// there and ca signed the certificate.
func writeLeaf(dir, name string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (Pair, error) {
	p := Pair{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
	found, err := existingPair(p.Cert, p.Key, "a new pair")
	switch {
	case err != nil:
		return Pair{}, err
	case found:
		p.Kept = true
		return p, checkKept(p, ca)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: %s key: %w", name, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: %s: %w", name, err)
	}
	return p, writeKeyAndCert(p.Key, p.Cert, key, der)
}

// checkKept refuses to keep a pair that does not load, or that ca did not
// sign (left from another CA): the cluster would not accept it.
func checkKept(p Pair, ca *x509.Certificate) error {
	c, err := tls.LoadX509KeyPair(p.Cert, p.Key)
	if err != nil {
		return fmt.Errorf("certs: existing %s: %w", p.Cert, err)
	}
	if err := c.Leaf.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("certs: existing %s was not signed by this CA: remove %s and %s to make a new pair", p.Cert, p.Cert, p.Key)
	}
	return nil
}

// writeKeyAndCert writes the key 0600 and the certificate 0644, refusing
// to replace either.
func writeKeyAndCert(keyPath, certPath string, key *ecdsa.PrivateKey, der []byte) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("certs: encode key: %w", err)
	}
	if err := writeNew(keyPath, 0o600, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}); err != nil {
		return err
	}
	return writeNew(certPath, 0o644, &pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeNew(path string, mode os.FileMode, b *pem.Block) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := pem.Encode(f, b); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// serial is a random 128-bit serial number, as RFC 5280 asks (positive,
// unpredictable).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // crypto/rand does not fail on supported platforms
	}
	return n.Add(n, big.NewInt(1))
}
