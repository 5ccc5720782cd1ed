// Command guest prints what a Go program can observe of its environment's
// entropy and time: the host's tests run it twice and compare.
package main

import (
	crand "crypto/rand"
	"fmt"
	"math/rand"
	"os"
	"time"
)

func main() {
	var b [8]byte
	_, _ = crand.Read(b[:])
	fmt.Printf("crypto/rand %x\n", b)
	fmt.Printf("math/rand %d\n", rand.Int63()) // the global generator, as hashicorp/raft uses it
	m := map[int]bool{}
	for i := range 16 {
		m[i] = true
	}
	order := ""
	for k := range m {
		order += fmt.Sprint(k, " ")
	}
	fmt.Println("map order", order)
	a, c := make(chan int, 1), make(chan int, 1)
	a <- 1
	c <- 2
	picks := ""
	for range 8 {
		select {
		case v := <-a:
			picks += fmt.Sprint(v)
			a <- v
		case v := <-c:
			picks += fmt.Sprint(v)
			c <- v
		}
	}
	fmt.Println("select", picks)
	start := time.Now()
	time.Sleep(time.Second)
	fmt.Println("now", start.UTC().Format(time.RFC3339Nano), "slept", time.Since(start))
	if len(os.Args) > 1 {
		os.Exit(3)
	}
}
