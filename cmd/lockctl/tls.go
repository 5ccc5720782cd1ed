package main

import (
	"crypto/tls"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/tlsconf"
)

// tlsFlags are the TLS flags every command shares, for a cluster serving
// https (lockd --tls-*, lockd dev --tls).
type tlsFlags struct {
	cacert, cert, key string
}

func (f *tlsFlags) register(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&f.cacert, "cacert", "", "PEM CA that signs the members' certificates (https endpoints; the default endpoints become https)")
	fs.StringVar(&f.cert, "cert", "", "PEM client certificate, for a cluster that requires one")
	fs.StringVar(&f.key, "key", "", "PEM private key of --cert")
}

func (f *tlsFlags) given() bool { return f.cacert != "" || f.cert != "" || f.key != "" }

// config is the TLS client config the flags name; nil without flags
// (https endpoints then trust the system's CAs).
func (f *tlsFlags) config() (*tls.Config, error) {
	if !f.given() {
		return nil, nil
	}
	if (f.cert == "") != (f.key == "") {
		return nil, usageError("--cert and --key go together")
	}
	var cfg *tls.Config
	if f.cacert != "" {
		ca, err := tlsconf.LoadPool(f.cacert)
		if err != nil {
			return nil, usageError("%w", err)
		}
		cfg = tlsconf.Client(ca, nil)
	} else {
		cfg = tlsconf.Client(nil, nil)
	}
	if f.cert != "" {
		cert, err := tlsconf.LoadCert(f.cert, f.key)
		if err != nil {
			return nil, usageError("%w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// httpClient sends the one-shot commands' requests.
func (f *tlsFlags) httpClient() (*http.Client, error) {
	cfg, err := f.config()
	if err != nil || cfg == nil {
		return http.DefaultClient, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}

// endpoints applies the TLS flags to --endpoints: with them, the default
// endpoints and those given without a scheme are https. It returns the
// endpoints and the scheme for those without one.
func (f *tlsFlags) endpoints(given []string) ([]string, string) {
	if !f.given() {
		return given, "http"
	}
	if slices.Equal(given, defaultEndpoints) {
		out := make([]string, len(given))
		for i, e := range given {
			out[i] = "https://" + strings.TrimPrefix(e, "http://")
		}
		return out, "https"
	}
	return given, "https"
}
