package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/core/tracing"
)

// startPropose starts the span of one proposal and notes the command in
// the request's Info (its log line and namespace count). Attributes are
// built only for a recorded span: tracing off costs no allocation here.
func (n *Node) startPropose(ctx context.Context, cmd *lock.Command) (context.Context, trace.Span) {
	if info := tracing.InfoFrom(ctx); info != nil {
		info.Note(cmd.Resource, cmd.ClientID, cmd.RequestID, cmd.LeaseID, n.cfg.Group)
	}
	ctx, span := n.cfg.Tracer.Start(ctx, "node.propose", trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("lockstep.node", n.cfg.ID),
			attribute.String("lockstep.shard", n.cfg.Group),
			attribute.String("lockstep.op", cmd.Op.String()),
			attribute.String("lockstep.resource", cmd.Resource),
			attribute.String("lockstep.client_id", cmd.ClientID),
		)
	}
	return ctx, span
}

// startForward starts the client span of a forward to leader; the
// forwarder's transport carries it to the leader as a traceparent.
func (n *Node) startForward(ctx context.Context, leader Peer) (context.Context, trace.Span) {
	ctx, span := n.cfg.Tracer.Start(ctx, "node.forward", trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("lockstep.node", n.cfg.ID), attribute.String("lockstep.leader", leader.ID))
	}
	return ctx, span
}

// startNodeSpan starts a span of this node's own work (serving a forward,
// a Raft apply), labelled with the node and shard.
func (n *Node) startNodeSpan(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	ctx, span := n.cfg.Tracer.Start(ctx, name, kind)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("lockstep.node", n.cfg.ID), attribute.String("lockstep.shard", n.cfg.Group))
	}
	return ctx, span
}

// traceApply splits a recorded raft.apply span into the steps the state
// machine timed (the same split as the stage histograms).
func (n *Node) traceApply(ctx context.Context, span trace.Span, called time.Time, t stageTimes) {
	if !span.IsRecording() || t.dispatched.IsZero() || t.applied.IsZero() {
		return
	}
	n.cfg.Tracer.Record(ctx, "raft.enqueue", called, t.dispatched)
	n.cfg.Tracer.Record(ctx, "raft.commit", t.dispatched, t.batchStart)
	n.cfg.Tracer.Record(ctx, "fsm.apply", t.batchStart, t.applied)
}

// endSpan ends span, marking it failed when err is set.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
