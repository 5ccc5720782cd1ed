package server

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

// cluster answers with the leader's view of the members: only the leader
// sees every member's heartbeats, so only it can tell a dead member from a
// live one. A follower fetches that view from the leader's HTTP address
// (with local=true, so the leader never forwards in turn) and, when it
// cannot, answers with its own view, where roles it cannot know are
// "unknown"; View says which one the caller got.
func (s *Server) cluster(req *request) (any, error) {
	local, err := queryBool(req.query, "local")
	if err != nil {
		return nil, err
	}
	if !local && !s.node.IsLeader() {
		if leader, ok := s.node.Leader(); ok && leader.HTTPAddr != "" && leader.ID != s.node.ID() {
			cr, err := s.leaderView(req.r.Context(), leader)
			if err == nil {
				return cr, nil
			}
			s.cfg.Logger.Debug("cluster: answering with the local view", "leader", leader.ID, "err", err)
		}
	}
	return s.localView(), nil
}

// localView is GET /cluster as this node sees it.
func (s *Server) localView() api.ClusterResponse {
	leader, _ := s.node.Leader()
	out := api.ClusterResponse{Leader: leader.ID, View: api.ViewLocal, Nodes: []api.Node{}}
	for _, m := range s.node.Members() {
		n := api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, State: m.Role}
		if m.ContactKnown {
			since := m.SinceContact.Milliseconds()
			n.LastContactMs = &since
		}
		if m.ID == s.node.ID() && m.Role == "leader" {
			out.View = api.ViewLeader
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// leaderView fetches the leader's own view within leaderViewTimeout.
func (s *Server) leaderView(ctx context.Context, leader node.Peer) (api.ClusterResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderViewTimeout)
	defer cancel()
	var cr api.ClusterResponse
	url := "http://" + leader.HTTPAddr + api.PathCluster + "?local=true"
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
