// Command consoletime measures how long the console's first page (Health)
// takes to render in headless Chromium against a running engramd: from
// navigation until the page marks itself ready, with its data fetched and
// its charts drawn. It signs in once with the key, then loads the page
// -n times and prints each time and the median.
//
//	go run ./scripts/consoletime -url http://127.0.0.1:8080 -key "$ENGRAM_API_KEY" -n 12
//
// Not a test: the figure goes into the README with the command beside it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "consoletime:", err)
		os.Exit(1)
	}
}

func run() error {
	base := flag.String("url", "http://127.0.0.1:8080", "engramd's base URL")
	key := flag.String("key", os.Getenv("ENGRAM_API_KEY"), "the API key to sign in with (default $ENGRAM_API_KEY)")
	n := flag.Int("n", 12, "how many loads to time")
	exe := flag.String("chromium", "/usr/bin/chromium", "the browser")
	flag.Parse()
	if *key == "" {
		return fmt.Errorf("no key: -key or ENGRAM_API_KEY")
	}
	dir, err := os.MkdirTemp("", "consoletime")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(*exe), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(dir),
		chromedp.WindowSize(1345, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()

	ready := chromedp.WaitVisible(chromedp.CSS(`#page section[data-ready]`))
	if err := chromedp.Do(ctx, chromedp.Navigate(*base+"/console/"), chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), *key), chromedp.Click(chromedp.CSS(`#signin-form button`)), ready); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	var times []time.Duration
	for i := range *n {
		// A page of its own each time, so every load fetches and draws
		// anew (the key stays in the tab's sessionStorage).
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			return fmt.Errorf("load %d: %w", i+1, err)
		}
		start := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(*base+"/console/#/health"), ready); err != nil {
			return fmt.Errorf("load %d: %w", i+1, err)
		}
		d := time.Since(start)
		times = append(times, d)
		fmt.Printf("load %2d: %v\n", i+1, d.Round(time.Millisecond))
	}
	slices.Sort(times)
	fmt.Printf("first page (Health), %d loads: min %v, median %v, max %v\n", len(times),
		times[0].Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	return nil
}
