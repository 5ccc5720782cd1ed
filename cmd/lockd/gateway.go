package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/core/tracing"
	"github.com/lockstep/lockstep/core/tracing/otlp"
)

// gatewayFlags is the command line of lockd gateway.
func gatewayFlags(c *gateway.Config, join *string, faults *gatewayFaultArgs, t *tlsArgs) *flag.FlagSet {
	*c = gateway.DefaultConfig()
	fs := flag.NewFlagSet("lockd gateway", flag.ContinueOnError)
	fs.StringVar(join, "join", "", "members' HTTP API addresses to learn the cluster from: host:port[,host:port]")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "HTTP API address to listen on")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "time to get a request answered, retries included (a blocking acquire adds its wait)")
	fs.DurationVar(&c.RefreshInterval, "refresh-interval", c.RefreshInterval, "how often to fetch the shard map and leaders again")
	faults.register(fs)
	t.registerGateway(fs)
	trace := new(otlp.Options)
	registerTrace(fs, trace)
	c.NewTracer = func(ctx context.Context, logger *slog.Logger) (*tracing.Tracer, func(context.Context) error, error) {
		o := *trace
		o.Service, o.Instance, o.Logger = "lockd-gateway", c.HTTPAddr, logger
		return otlp.Setup(ctx, o)
	}
	return fs
}

func parseGateway(args []string) (gateway.Config, error) {
	var c gateway.Config
	var join string
	var faults gatewayFaultArgs
	var t tlsArgs
	if err := parse(gatewayFlags(&c, &join, &faults, &t), args); err != nil {
		return gateway.Config{}, err
	}
	if err := applyGatewayFaults(&faults, &c); err != nil {
		return gateway.Config{}, err
	}
	var err error
	if c.TLS, c.UpstreamTLS, err = t.gateway(); err != nil {
		return gateway.Config{}, err
	}
	c.Join = list(join)
	if len(c.Join) == 0 {
		return gateway.Config{}, errors.New("--join is required")
	}
	return c, c.Validate()
}

// runGateway serves a gateway until SIGINT or SIGTERM.
func runGateway(c gateway.Config, stdout io.Writer, logger *slog.Logger) error {
	c.Logger = logger
	g, err := gateway.Start(context.Background(), c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "lockstep gateway: %s (joined %s)\n", g.URL(), strings.Join(c.Join, ","))
	<-signals()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return g.Stop(ctx)
}

// startDevGateway serves a gateway joined to every dev node.
func startDevGateway(addr string, peers []node.Peer, logger *slog.Logger, pki *devPKI, trace otlp.Options) (*gateway.Gateway, error) {
	c := gateway.DefaultConfig()
	c.HTTPAddr, c.Logger = addr, logger
	if pki != nil {
		c.TLS, c.UpstreamTLS = pki.gateway, pki.upstream
	}
	trace.Service, trace.Instance = "lockd-gateway", addr
	c.NewTracer = func(ctx context.Context, logger *slog.Logger) (*tracing.Tracer, func(context.Context) error, error) {
		trace.Logger = logger
		return otlp.Setup(ctx, trace)
	}
	for _, p := range peers {
		c.Join = append(c.Join, p.HTTPAddr)
	}
	return gateway.Start(context.Background(), c)
}

func stopDevGateway(g *gateway.Gateway, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Stop(ctx); err != nil {
		logger.Warn("stop gateway", "err", err)
	}
}
