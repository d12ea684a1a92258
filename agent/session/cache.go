package session

import (
	"container/list"
	"runtime"
	"sync"
	"weak"
)

// cache keeps the MaxCached most recently used sessions in memory, and
// remembers (weakly) every session still referenced by a caller, so that one
// key never has two live *Session values: a session evicted from the LRU but
// still held by the agent is handed out again by Load instead of a second,
// diverging copy read from disk. Unreferenced evicted sessions are garbage.
type cache struct {
	mu   sync.Mutex
	max  int
	lru  *list.List               // of *Session, most recent first
	idx  map[string]*list.Element // key -> element in lru
	live map[string]weak.Pointer[Session]
}

func newCache(max int) *cache {
	return &cache{
		max:  max,
		lru:  list.New(),
		idx:  make(map[string]*list.Element),
		live: make(map[string]weak.Pointer[Session]),
	}
}

// get returns the live session of key, marking it most recently used.
func (c *cache) get(key string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.idx[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*Session)
	}
	if w, ok := c.live[key]; ok {
		if s := w.Value(); s != nil {
			c.pushLocked(s)
			return s
		}
	}
	return nil
}

// add registers a session freshly read from storage. The caller holds the
// key's lock, so no other session of the key can be live.
func (c *cache) add(s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[s.Key] = weak.Make(s)
	runtime.AddCleanup(s, c.forget, s.Key)
	c.pushLocked(s)
}

// touch marks s most recently used (a write through a held, evicted session
// brings it back).
func (c *cache) touch(s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.idx[s.Key]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.pushLocked(s)
}

func (c *cache) pushLocked(s *Session) {
	c.idx[s.Key] = c.lru.PushFront(s)
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.idx, last.Value.(*Session).Key)
	}
}

// forget drops the weak entry of a collected session.
func (c *cache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.live[key]; ok && w.Value() == nil {
		delete(c.live, key)
	}
}

// peek returns the session of key if it is in memory, without changing
// recency.
func (c *cache) peek(key string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.idx[key]; ok {
		return e.Value.(*Session)
	}
	if w, ok := c.live[key]; ok {
		return w.Value()
	}
	return nil
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// keyLocks serializes operations per key; entries exist only while in use.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyLock)
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
