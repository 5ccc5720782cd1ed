package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/node"
)

// maxClusterReply bounds a leader's /cluster reply read by a follower.
const maxClusterReply = 1 << 20

// Cluster answers with the shard map and, for the members, shard 1's
// leader's view (GET /cluster): only a leader sees every member's
// heartbeats, so only it can tell a dead member from a live one. A
// follower fetches that view from the leader's HTTP address (with
// local=true, so the leader never forwards in turn) and, when it cannot,
// answers with its own view, where roles it cannot know are "unknown";
// View says which one the caller got. The shards are always this member's
// view. With local, this member's view only.
func (s *Service) Cluster(ctx context.Context, local bool) (api.ClusterResponse, error) {
	out := s.localView()
	if groups := s.host.Groups(); !local && len(groups) > 0 && !groups[0].IsLeader() {
		if leader, ok := groups[0].Leader(); ok && leader.ID != s.host.ID() {
			if addr := s.host.APIAddr(leader.ID); addr != "" {
				cr, err := s.leaderView(ctx, leader, addr)
				if err == nil {
					out.View, out.Nodes = cr.View, cr.Nodes
				} else {
					s.cfg.Logger.Debug("cluster: answering with the local view", "leader", leader.ID, "err", err)
				}
			}
		}
	}
	return out, nil
}

// localView is GET /cluster as this member sees it.
func (s *Service) localView() api.ClusterResponse {
	out := api.ClusterResponse{Leader: s.host.Leader(), MapVersion: s.host.MapVersion(), View: api.ViewLocal,
		Nodes: []api.Node{}, Shards: []api.Shard{}}
	groups := s.host.Groups()
	if len(groups) == 0 {
		return out
	}
	for _, m := range groups[0].Members() {
		n := api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: s.host.APIAddr(m.ID), State: m.Role}
		if m.ContactKnown {
			since := m.SinceContact.Milliseconds()
			n.LastContactMs = &since
		}
		if m.ID == s.host.ID() && m.Role == "leader" {
			out.View = api.ViewLeader
		}
		out.Nodes = append(out.Nodes, n)
	}
	for i, g := range groups {
		st := g.Stats()
		sh := api.Shard{ID: i + 1, Members: []string{}, Term: st.Term, CommitIndex: st.CommitIndex,
			Resources: st.Lock.Resources}
		for _, p := range g.Peers() {
			sh.Members = append(sh.Members, p.ID)
		}
		if leader, ok := g.Leader(); ok {
			sh.Leader, sh.LeaderHTTP = leader.ID, s.host.APIAddr(leader.ID)
		}
		out.Shards = append(out.Shards, sh)
	}
	return out
}

// leaderView fetches the leader's own view within leaderViewTimeout.
func (s *Service) leaderView(ctx context.Context, leader node.Peer, addr string) (api.ClusterResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderViewTimeout)
	defer cancel()
	var cr api.ClusterResponse
	url := s.peerScheme + "://" + addr + api.PathCluster + "?local=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return cr, fmt.Errorf("build request: %w", err)
	}
	resp, err := s.peers.Do(req)
	if err != nil {
		return cr, fmt.Errorf("ask %s: %w", leader.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cr, fmt.Errorf("ask %s: HTTP %d", leader.ID, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxClusterReply)).Decode(&cr); err != nil {
		return cr, fmt.Errorf("decode %s's view: %w", leader.ID, err)
	}
	// It may have lost leadership since: its local view is no better than ours.
	if cr.View != api.ViewLeader {
		return cr, fmt.Errorf("%s no longer leads", leader.ID)
	}
	return cr, nil
}
