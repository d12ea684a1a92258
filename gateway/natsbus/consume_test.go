package natsbus

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// scriptedConsumer delivers fixed messages, then fails.
type scriptedConsumer struct {
	jetstream.Consumer
	msgs []jetstream.Msg
}

func (c *scriptedConsumer) Messages(...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	return &scriptedIter{msgs: c.msgs}, nil
}

type scriptedIter struct {
	jetstream.MessagesContext
	msgs []jetstream.Msg
}

var errScriptDone = errors.New("script done")

func (it *scriptedIter) Next(...jetstream.NextOpt) (jetstream.Msg, error) {
	if len(it.msgs) == 0 {
		return nil, errScriptDone
	}
	m := it.msgs[0]
	it.msgs = it.msgs[1:]
	return m, nil
}
func (it *scriptedIter) Stop() {}

// delivery is a message as delivered: consumer and stream sequences.
type delivery struct {
	jetstream.Msg
	dseq, sseq uint64
}

func (d delivery) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Consumer: d.dseq, Stream: d.sseq}}, nil
}
func (d delivery) Data() []byte { return []byte(`"x"`) }

// A delivery that never arrived (consumer sequence 3 missing) stops the
// pull before the message after it: handling 4 first would put it before
// the lost one, which JetStream redelivers only after AckWait.
func TestConsumeStopsAtALostDelivery(t *testing.T) {
	cons := &scriptedConsumer{msgs: []jetstream.Msg{
		delivery{dseq: 1, sseq: 10}, delivery{dseq: 2, sseq: 11}, delivery{dseq: 4, sseq: 13}, delivery{dseq: 5, sseq: 14},
	}}
	var handled []uint64
	err := consume(context.Background(), cons, 8, slog.New(slog.DiscardHandler), "undecodable", func(_ jetstream.Msg, seq uint64, _ string) (bool, error) {
		handled = append(handled, seq)
		return true, nil
	})
	if !errors.Is(err, errDeliveryGap) {
		t.Errorf("err = %v, want errDeliveryGap", err)
	}
	if want := []uint64{10, 11}; !slices.Equal(handled, want) {
		t.Errorf("handled %v, want %v", handled, want)
	}
}
