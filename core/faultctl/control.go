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

// DiskPath is the endpoint that sets the log disk's fault (POST a
// DiskChange) or reads its state (GET); both answer a DiskState.
const DiskPath = "/faults/disk"

// ClockChange is one request to ControlPath. Each field that is set
// applies: OffsetNs replaces the offset, Rate the drift rate, JumpNs adds a
// forward jump.
type ClockChange struct {
	OffsetNs *int64   `json:"offset_ns,omitempty"`
	Rate     *float64 `json:"rate,omitempty"`
	JumpNs   *int64   `json:"jump_ns,omitempty"`
}

// DiskChange is one request to DiskPath: it replaces the whole fault, so
// {} heals the disk (a log already broken stays broken until a restart).
type DiskChange struct {
	DelayNs int64 `json:"delay_ns"`
	Fail    bool  `json:"fail"`
}

// Handler serves ControlPath for c and DiskPath for d. It listens on its
// own port, never on the public API.
func Handler(c *Clock, d *Disk) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ControlPath, func(w http.ResponseWriter, r *http.Request) {
		var ch ClockChange
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&ch); err != nil {
			writeError(w, fmt.Errorf("bad clock change: %w", err))
			return
		}
		if err := apply(c, ch); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+DiskPath, func(w http.ResponseWriter, r *http.Request) {
		var ch DiskChange
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&ch); err != nil {
			writeError(w, fmt.Errorf("bad disk change: %w", err))
			return
		}
		if err := d.Set(time.Duration(ch.DelayNs), ch.Fail); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, d.State())
	})
	mux.HandleFunc("GET "+DiskPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, d.State())
	})
	return mux
}

// writeError answers a refused change: 400 with the API's error shape.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error(), "code": "invalid_argument"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
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
