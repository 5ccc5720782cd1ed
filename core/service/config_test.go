package service

import (
	"strings"
	"testing"
)

// TestConfigValidate: goal — the defaults pass, a zero field takes its
// default, and every broken rule is reported, each on its own, so one
// look shows everything to fix. Method: validate the defaults, a zero
// config after WithDefaults, and a config breaking every rule.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("zero config with defaults: %v", err)
	}
	bad := Config{RequestTimeout: -1, MaxInFlight: -1, ReadyLeaderContact: -1, ReadyTimeout: -1, NamespaceLimit: -1}
	err := bad.WithDefaults().Validate()
	for _, field := range []string{"RequestTimeout", "MaxInFlight", "ReadyLeaderContact", "ReadyTimeout", "NamespaceLimit"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New with no host")
	}
}
