package fsm

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvnode/kvnode/fsm/codec"
	"github.com/kvnode/kvnode/region"
)

// TestConcurrentUse runs readers, snapshots and restores against a stream
// of Applies. Run with -race: it checks the locking, and that every List
// sees an ordered region while trees are modified and cloned under it.
func TestConcurrentUse(t *testing.T) {
	n := newNode(t)
	n.create("r", region.Replicate)
	seed := persist(t, n.f)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	report := func(msg string) {
		select {
		case errs <- msg:
		default:
		}
	}

	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				list, err := n.f.List("r", 0, -1)
				if err != nil {
					report("List: " + err.Error())
					return
				}
				for j := 1; j < len(list); j++ {
					if list[j-1].Key >= list[j].Key {
						report("List out of order: " + list[j-1].Key + " before " + list[j].Key)
						return
					}
				}
				n.f.Regions()
				_, _ = n.f.GetMany("r", 0, []string{"k1", "k2"})
				_, _ = n.f.Count("r", 0)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// WaitApplied from another goroutine while entries stream in.
		if err := n.f.WaitApplied(ctx, 400); err != nil {
			report("WaitApplied: " + err.Error())
		}
	}()

	// Raft's FSM goroutine: applies, snapshots (persisted concurrently), and
	// one restore of the early snapshot in the middle.
	var persists sync.WaitGroup
	for i := 0; i < 500; i++ {
		k := "k" + strconv.Itoa(i%50)
		n.must(codec.Command{Op: codec.OpPut, Region: "r", Entries: entries(k, `{"i":`+strconv.Itoa(i)+`}`)})
		if i%7 == 0 {
			n.apply(codec.Command{Op: codec.OpDelete, Region: "r", Keys: []string{k}})
		}
		if i%100 == 50 {
			snap, err := n.f.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			persists.Add(1)
			go func() {
				defer persists.Done()
				defer snap.Release()
				if err := snap.Persist(&memSink{}); err != nil {
					report("Persist: " + err.Error())
				}
			}()
		}
		if i == 250 {
			if err := restore(n.f, seed); err != nil {
				t.Fatal(err)
			}
		}
	}
	persists.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}
