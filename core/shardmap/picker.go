package shardmap

// Picker chooses the member each attempt of one request goes to. It is
// not safe for concurrent use: one request, one Picker.
type Picker struct {
	cache    *Cache
	resource string
	// start is where the rotation through the members begins (the
	// caller's choice: the member that answered last, or a counter that
	// spreads requests); turn is how far it has gone.
	start, turn int
	// asked counts Next calls; failedAt is the call in which a member
	// last failed this request.
	asked    int
	failedAt map[string]int
}

// Picker returns a Picker for a request on resource ("" for none),
// rotating through the members from start.
func (c *Cache) Picker(resource string, start int) *Picker {
	return &Picker{cache: c, resource: resource, start: max(start, 0), failedAt: map[string]int{}}
}

// Next returns the member to ask, and whether the map names it the
// shard's leader. The leader goes first when the map names one that has
// not failed this request; then the members in turn that have not; once
// every member has failed, the one that failed longest ago. A failed
// member is thus never asked again before one that failed earlier, and a
// cached leader (often a member that just died: followers name a dead
// leader until their election timeout) never beats a member that failed
// longer ago: a release could otherwise spend its last attempt on the
// dead member its previous attempt had just failed on.
func (p *Picker) Next() (member string, leader bool) {
	p.asked++
	lead := p.cache.Leader(p.resource)
	if _, failed := p.failedAt[lead]; lead != "" && !failed {
		return lead, true
	}
	members := p.cache.Members()
	oldest := -1
	for range members {
		idx := (p.start + p.turn) % len(members)
		p.turn++
		at, failed := p.failedAt[members[idx]]
		if !failed {
			return members[idx], members[idx] == lead
		}
		if oldest < 0 || at < p.failedAt[members[oldest]] {
			oldest = idx
		}
	}
	return members[oldest], members[oldest] == lead
}

// Failed records that the member Next returned last failed this request.
func (p *Picker) Failed(member string) { p.failedAt[member] = p.asked }
