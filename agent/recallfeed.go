package agent

import (
	"context"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/tools/recall"
)

// fileStore is a session store kept in files that can be followed
// (session.FileStore).
type fileStore interface {
	Files() ([]session.StoredFile, error)
	ReadFrom(ctx context.Context, name string, offset int64, fn func(session.Entry) error) (int64, error)
	TailSum(name string, offset int64) (uint64, error)
}

// fileFeed lets memory_search's index follow a file store.
type fileFeed struct{ fs fileStore }

// RecallFeed is memory_search's feed of store, or nil when the store
// keeps no files (the cluster's key-value store): then the memory files
// alone are searched.
func RecallFeed(store SessionStore) recall.Feed {
	if fs, ok := store.(fileStore); ok {
		return fileFeed{fs}
	}
	return nil
}

func (f fileFeed) Files(context.Context) ([]recall.FeedFile, error) {
	files, err := f.fs.Files()
	if err != nil {
		return nil, err
	}
	out := make([]recall.FeedFile, len(files))
	for i, fl := range files {
		out[i] = recall.FeedFile{Name: fl.Name, Size: fl.Size, ModTime: fl.ModTime}
	}
	return out, nil
}

func (f fileFeed) ReadFrom(ctx context.Context, name string, offset int64, fn func(recall.Message) error) (int64, error) {
	return f.fs.ReadFrom(ctx, name, offset, func(e session.Entry) error {
		return fn(recall.Message{Session: e.Key, Archived: e.Archived, Role: e.Message.Role, Text: e.Message.Text(), Time: e.Message.Timestamp})
	})
}

func (f fileFeed) TailSum(name string, offset int64) (uint64, error) {
	return f.fs.TailSum(name, offset)
}
