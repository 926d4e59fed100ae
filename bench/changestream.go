package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// changeStreamBenchmarks measure change streams: how soon a waiting
// watcher gets an acknowledged insert's event (compare with Floor/Ping),
// what idle watchers cost, and whether watchers keep up with a steady
// stream of durable inserts.
func changeStreamBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: "ChangeStream/AckToEvent", Group: GroupChangeStreams, Unit: "op", Setup: setupAckToEvent},
		{Name: "ChangeStream/IdleWatchers100", Group: GroupChangeStreams, Unit: "% CPU", Quantity: true, Setup: setupIdleWatchers},
		{Name: "ChangeStream/Keepup10x1000", Group: GroupChangeStreams, Unit: "ms lag", Quantity: true, Setup: setupKeepup},
	}
}

// watch opens a change stream, or says the target has none.
func watch(ctx context.Context, e *Env) (*mongo.ChangeStream, error) {
	cs, err := e.Coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Second))
	if err != nil {
		return nil, unsupported("watch", err)
	}
	return cs, nil
}

// eventPump reads a stream's events on a goroutine of its own, handing on
// each event's _id.
type eventPump struct {
	cs     *mongo.ChangeStream
	ids    chan int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startPump(cs *mongo.ChangeStream, buffer int) *eventPump {
	ctx, cancel := context.WithCancel(context.Background())
	p := &eventPump{cs: cs, ids: make(chan int64, buffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for cs.Next(ctx) {
			id, _ := cs.Current.Lookup("documentKey", "_id").AsInt64OK()
			select {
			case p.ids <- id:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

func (p *eventPump) stop() {
	p.cancel()
	<-p.done
	p.cs.Close(context.Background())
}

// awaitID waits for the event of _id id.
func (p *eventPump) awaitID(ctx context.Context, id int64) error {
	for {
		select {
		case got := <-p.ids:
			if got == id {
				return nil
			}
		case <-p.done:
			return fmt.Errorf("change stream ended: %v", p.cs.Err())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// awaitCount waits until the stream has delivered n events.
func (p *eventPump) awaitCount(ctx context.Context, n int64) error {
	for got := int64(0); got < n; got++ {
		select {
		case <-p.ids:
		case <-p.done:
			return fmt.Errorf("change stream ended after %d of %d events: %v", got, n, p.cs.Err())
		case <-ctx.Done():
			return fmt.Errorf("%d of %d events: %w", got, n, ctx.Err())
		}
	}
	return nil
}

// setupAckToEvent times, after an untimed acknowledged insert, the wait
// until a watcher waiting in its getMore has the insert's event.
func setupAckToEvent(ctx context.Context, e *Env) (*Workload, error) {
	cs, err := watch(ctx, e)
	if err != nil {
		return nil, err
	}
	p := startPump(cs, 16)
	return &Workload{
		Prepare: func(ctx context.Context, n int64) error {
			_, err := e.Coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n}})
			return err
		},
		Call:  func(ctx context.Context, n int64) error { return p.awaitID(ctx, n) },
		Close: p.stop,
	}, nil
}

// idleWindow is how long the idle and busy CPU are each measured.
const idleWindow = 10 * time.Second

// setupIdleWatchers measures the server's CPU (serverStatus.extra_info)
// with 100 watchers waiting on a collection nobody writes, less the same
// without them, in percent of one core. Each watcher's getMore waits the
// driver's maxAwaitTime (1 s) and is sent again.
func setupIdleWatchers(ctx context.Context, e *Env) (*Workload, error) {
	return &Workload{Measure: func(ctx context.Context) (float64, error) {
		base, err := serverCPU(ctx, e, idleWindow)
		if err != nil {
			return 0, err
		}
		var pumps []*eventPump
		defer func() {
			for _, p := range pumps {
				p.stop()
			}
		}()
		for range 100 {
			cs, err := watch(ctx, e)
			if err != nil {
				return 0, err
			}
			pumps = append(pumps, startPump(cs, 1))
		}
		time.Sleep(2 * time.Second) // every watcher in its first getMore
		busy, err := serverCPU(ctx, e, idleWindow)
		if err != nil {
			return 0, err
		}
		return max(busy-base, 0), nil
	}}, nil
}

// serverCPU is the server's CPU time over d, in percent of one core, from
// serverStatus.extra_info (user_time_us and system_time_us, as mongod
// reports them on Linux).
func serverCPU(ctx context.Context, e *Env, d time.Duration) (float64, error) {
	cpu := func() (int64, error) {
		raw, err := e.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			return 0, err
		}
		user, ok1 := raw.Lookup("extra_info", "user_time_us").AsInt64OK()
		sys, ok2 := raw.Lookup("extra_info", "system_time_us").AsInt64OK()
		if !ok1 || !ok2 {
			return 0, errNotApplicable{reason: "serverStatus has no extra_info CPU times"}
		}
		return user + sys, nil
	}
	t0, err := cpu()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(d)
	t1, err := cpu()
	if err != nil {
		return 0, err
	}
	return 100 * float64(t1-t0) / float64(time.Since(start).Microseconds()), nil
}

// Keep-up workload: 10 watchers on a collection taking 1,000 durable
// inserts a second for keepupSeconds.
const (
	keepupWatchers = 10
	keepupRate     = 1000
	keepupSeconds  = 5
)

// setupKeepup measures, once the inserts stop, how long the slowest of
// the watchers takes to have every insert's event: a watcher that keeps
// up has them within a round trip or two.
func setupKeepup(ctx context.Context, e *Env) (*Workload, error) {
	return &Workload{Measure: func(ctx context.Context) (float64, error) {
		var pumps []*eventPump
		defer func() {
			for _, p := range pumps {
				p.stop()
			}
		}()
		for range keepupWatchers {
			cs, err := watch(ctx, e)
			if err != nil {
				return 0, err
			}
			pumps = append(pumps, startPump(cs, keepupRate*keepupSeconds+16))
		}
		last, err := pacedInserts(ctx, e.Coll, keepupRate, keepupSeconds*time.Second)
		if err != nil {
			return 0, err
		}
		stopped := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(pumps))
		for i, p := range pumps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				errs[i] = p.awaitCount(wctx, last)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		return float64(time.Since(stopped).Microseconds()) / 1000, nil
	}}, nil
}

// pacedInserts inserts {_id: 1, 2, ...} at rate a second for d, from as
// many goroutines as the pace needs, and returns the last _id.
func pacedInserts(ctx context.Context, coll *mongo.Collection, rate int, d time.Duration) (int64, error) {
	const writers = 16
	total := int64(rate) * int64(d/time.Second)
	start := time.Now()
	var mu sync.Mutex
	next := int64(0)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				next++
				n := next
				mu.Unlock()
				if n > total {
					return
				}
				if wait := time.Until(start.Add(time.Duration(n) * time.Second / time.Duration(rate))); wait > 0 {
					time.Sleep(wait)
				}
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n}}); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}
