package faultctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// ControlPath is the endpoint of the fault control listener that changes
// the clock.
const ControlPath = "/faults/clock"

// ClockChange is one request to ControlPath. Each field that is set
// applies: OffsetNs replaces the offset, Rate the drift rate, JumpNs adds a
// forward jump.
type ClockChange struct {
	OffsetNs *int64   `json:"offset_ns,omitempty"`
	Rate     *float64 `json:"rate,omitempty"`
	JumpNs   *int64   `json:"jump_ns,omitempty"`
}

// Handler serves ControlPath for c. It listens on its own port, never on
// the public API.
func Handler(c *Clock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ControlPath, func(w http.ResponseWriter, r *http.Request) {
		var ch ClockChange
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&ch); err != nil {
			http.Error(w, fmt.Sprintf("bad clock change: %v", err), http.StatusBadRequest)
			return
		}
		if err := apply(c, ch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// apply checks every field before changing anything, so a bad request
// leaves the clock as it was.
func apply(c *Clock, ch ClockChange) error {
	if ch.Rate != nil && (!(*ch.Rate > 0) || *ch.Rate > 100) {
		return fmt.Errorf("rate %v must be in (0, 100]", *ch.Rate)
	}
	if ch.JumpNs != nil && *ch.JumpNs < 0 {
		return fmt.Errorf("jump_ns %d must not be negative", *ch.JumpNs)
	}
	if ch.OffsetNs != nil {
		c.SetOffset(time.Duration(*ch.OffsetNs))
	}
	if ch.Rate != nil {
		if err := c.SetRate(*ch.Rate); err != nil {
			return err
		}
	}
	if ch.JumpNs != nil {
		return c.Jump(time.Duration(*ch.JumpNs))
	}
	return nil
}
