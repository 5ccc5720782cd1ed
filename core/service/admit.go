package service

import "fmt"

// Admit takes one of the MaxInFlight request tokens every front end
// shares, so one bound covers the member; done returns it. When none is
// free it refuses at once with ErrOverloaded: nothing was done, a retry is
// safe. Front ends admit each API request before decoding it; watches and
// probes are not admitted (they last, or must answer under load).
func (s *Service) Admit() (done func(), err error) {
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }, nil
	default:
		return nil, fmt.Errorf("%w: this member already serves its bound of %d requests at once (--max-in-flight) and refused this one "+
			"before doing anything: retry after Retry-After, or on another member", ErrOverloaded, s.cfg.MaxInFlight)
	}
}
