package lock

// snapshotVersion encodes s as a member writing that snapshot version
// would (5: before permits), for the tests of older snapshots.
func (s *State) snapshotVersion(version int) []byte {
	v := s.view()
	return v.encodeVersion(version)
}
