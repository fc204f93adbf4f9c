package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/engram-dev/engram/eval"
)

// progress shows how far each agent is, on one line redrawn in place on a
// terminal, or a line every ten seconds otherwise.
type progress struct {
	w        io.Writer
	total    int
	terminal bool
	// label starts each line (which run it is).
	label string

	mu     sync.Mutex
	names  []string
	done   []int
	recent [][]bool // each agent's last outcomes, for its running success rate

	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// recentWindow is how many outcomes the running success rate is over.
const recentWindow = 20

func newProgress(w io.Writer, total int, names ...string) *progress {
	p := &progress{w: w, total: total, names: names, done: make([]int, len(names)), recent: make([][]bool, len(names)),
		quit: make(chan struct{}), terminal: isTerminal(w)}
	every := 10 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				p.draw(true)
				return
			case <-t.C:
				p.draw(false)
			}
		}
	})
	return p
}

// observer is what eval.Run calls with each outcome of agent i.
func (p *progress) observer(i int) func(eval.Outcome) {
	return func(o eval.Outcome) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done[i]++
		p.recent[i] = append(p.recent[i], o.Success)
		if len(p.recent[i]) > recentWindow {
			p.recent[i] = p.recent[i][1:]
		}
	}
}

// stop draws the last state and ends the redrawing; later calls do
// nothing.
func (p *progress) stop() {
	p.once.Do(func() {
		close(p.quit)
		p.wg.Wait()
	})
}

func (p *progress) draw(last bool) {
	p.mu.Lock()
	var parts []string
	for i, name := range p.names {
		ok := 0
		for _, s := range p.recent[i] {
			if s {
				ok++
			}
		}
		rate := "  - "
		if n := len(p.recent[i]); n > 0 {
			rate = fmt.Sprintf("%.2f", float64(ok)/float64(n))
		}
		parts = append(parts, fmt.Sprintf("%s %s, last %d: %s", name, eval.ProgressBar(p.done[i], p.total, 12), recentWindow, rate))
	}
	p.mu.Unlock()
	line := p.label + strings.Join(parts, " │ ")
	switch {
	case p.terminal && last:
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	case p.terminal:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}

// isTerminal reports whether f is a terminal: a person watching.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
