package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/sirupsen/logrus"
)

// driver holds what the commands made: clients, producers, consumers and admins by handle, and the
// messages received but not yet acknowledged, by the token handed to the harness.
//
// Producers publish without batching, consumers acknowledge with the broker's response
// (AckWithResponse), so an acknowledgement has reached the broker when the call returns.
type driver struct {
	mu       sync.Mutex
	handles  map[string]any
	next     map[string]int
	received map[string]received
	tokens   int
	logger   log.Logger
}

type received struct {
	consumer pulsar.Consumer
	message  pulsar.Message
}

type admin struct{ client pulsaradmin.Client }

func newDriver() *driver {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	return &driver{handles: map[string]any{}, next: map[string]int{}, received: map[string]received{},
		logger: log.NewLoggerWithLogrus(l)}
}

func (d *driver) add(prefix string, value any) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next[prefix]++
	handle := fmt.Sprintf("%s%d", prefix, d.next[prefix])
	d.handles[handle] = value
	return map[string]any{"handle": handle}
}

func (d *driver) get(args map[string]json.RawMessage, key string) (any, error) {
	handle, err := text(args, key)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	value, ok := d.handles[handle]
	if !ok {
		return nil, badRequest{fmt.Sprintf("no open handle %q", handle)}
	}
	return value, nil
}

// timedOut is what a bounded wait answers when the library gave nothing in time.
type timedOut struct{ what string }

func (e timedOut) Error() string {
	return e.what + ": no answer from the library within the request's timeout_ms"
}

// bounded runs call and waits at most the request's timeout_ms for it; a call still running then goes on
// in the background (the library's own operation timeout ends it).
func bounded[T any](args map[string]json.RawMessage, what string, call func() (T, error)) (T, error) {
	var zero T
	ms, err := number(args, "timeout_ms")
	if err != nil {
		return zero, err
	}
	type outcome struct {
		value T
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		value, err := call()
		done <- outcome{value, err}
	}()
	select {
	case got := <-done:
		return got.value, got.err
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return zero, timedOut{what}
	}
}

func (d *driver) closeHandle(value any) {
	switch v := value.(type) {
	case pulsar.Client:
		v.Close()
	case pulsar.Producer:
		v.Close()
	case pulsar.Consumer:
		v.Close()
	}
}

func (d *driver) close(args map[string]json.RawMessage) (map[string]any, error) {
	handle, err := text(args, "handle")
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	value, ok := d.handles[handle]
	delete(d.handles, handle)
	d.mu.Unlock()
	if !ok {
		return nil, badRequest{fmt.Sprintf("no open handle %q", handle)}
	}
	_, err = bounded(args, "close "+handle, func() (struct{}, error) {
		d.closeHandle(value)
		return struct{}{}, nil
	})
	return map[string]any{}, err
}

// closeAll closes every handle: consumers and producers before the clients they came from.
func (d *driver) closeAll() int {
	d.mu.Lock()
	values := d.handles
	d.handles = map[string]any{}
	d.received = map[string]received{}
	d.mu.Unlock()
	closed := len(values)
	for _, pass := range []func(any) bool{
		func(v any) bool { _, ok := v.(pulsar.Consumer); return ok },
		func(v any) bool { _, ok := v.(pulsar.Producer); return ok },
		func(v any) bool { return true },
	} {
		for handle, value := range values {
			if pass(value) {
				d.closeHandle(value)
				delete(values, handle)
			}
		}
	}
	return closed
}

func (d *driver) reset(map[string]json.RawMessage) (map[string]any, error) {
	return map[string]any{"closed": d.closeAll()}, nil
}

func millis(args map[string]json.RawMessage, key string) (time.Duration, error) {
	ms, err := number(args, key)
	return time.Duration(ms) * time.Millisecond, err
}

func (d *driver) createClient(args map[string]json.RawMessage) (map[string]any, error) {
	url, err := text(args, "service_url")
	if err != nil {
		return nil, err
	}
	operation, err := millis(args, "operation_timeout_ms")
	if err != nil {
		return nil, err
	}
	connection, err := millis(args, "connection_timeout_ms")
	if err != nil {
		return nil, err
	}
	options := pulsar.ClientOptions{URL: url, OperationTimeout: operation, ConnectionTimeout: connection,
		Logger: d.logger}
	if token, present := optionalText(args, "auth_token"); present {
		options.Authentication = pulsar.NewAuthenticationToken(token)
	}
	if trust, present := optionalText(args, "tls_trust_certs_file"); present {
		options.TLSTrustCertsFilePath = trust
		options.TLSValidateHostname = true
	}
	client, err := bounded(args, "NewClient", func() (pulsar.Client, error) { return pulsar.NewClient(options) })
	if err != nil {
		return nil, err
	}
	return d.add("c", client), nil
}

func (d *driver) getPartitions(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "client")
	if err != nil {
		return nil, err
	}
	client, ok := value.(pulsar.Client)
	if !ok {
		return nil, badRequest{"client names no client"}
	}
	topic, err := text(args, "topic")
	if err != nil {
		return nil, err
	}
	if _, present := args["auto_create"]; present {
		return nil, unsupported{fmt.Sprintf("%s %s has no call taking PIP-344's metadataAutoCreationEnabled: "+
			"Client.TopicPartitions(topic string) is its only partitions lookup, and its PARTITIONED_METADATA "+
			"request has no field 6 (apache/pulsar-client-go@v%s:pulsar/client.go, pulsar/internal/lookup_service.go)",
			libraryModule, libraryVersion(), libraryVersion())}
	}
	topics, err := bounded(args, "TopicPartitions", func() ([]string, error) { return client.TopicPartitions(topic) })
	if err != nil {
		return nil, err
	}
	return map[string]any{"topics": topics}, nil
}

func (d *driver) createProducer(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "client")
	if err != nil {
		return nil, err
	}
	client, ok := value.(pulsar.Client)
	if !ok {
		return nil, badRequest{"client names no client"}
	}
	topic, err := text(args, "topic")
	if err != nil {
		return nil, err
	}
	timeout, err := millis(args, "timeout_ms")
	if err != nil {
		return nil, err
	}
	producer, err := bounded(args, "CreateProducer", func() (pulsar.Producer, error) {
		return client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: timeout,
			MessageRouter: onePartition()})
	})
	if err != nil {
		return nil, err
	}
	return d.add("p", producer), nil
}

// onePartition routes every message of a producer to one partition, chosen at random when the producer is
// made, as the Java driver's MessageRoutingMode.SinglePartition does: the protocol's producer.create publishes
// to one partition, so a consumer receives the messages in the order they were sent. (The library's default
// router takes the next partition for each message when batching is off, pulsar/default_router.go.)
func onePartition() func(*pulsar.ProducerMessage, pulsar.TopicMetadata) int {
	chosen := -1
	var mu sync.Mutex
	return func(_ *pulsar.ProducerMessage, metadata pulsar.TopicMetadata) int {
		mu.Lock()
		defer mu.Unlock()
		if partitions := int(metadata.NumPartitions()); partitions <= 1 {
			return 0
		} else if chosen < 0 {
			chosen = rand.Intn(partitions)
		}
		return chosen
	}
}

func (d *driver) send(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "producer")
	if err != nil {
		return nil, err
	}
	producer, ok := value.(pulsar.Producer)
	if !ok {
		return nil, badRequest{"producer names no producer"}
	}
	payload, err := text(args, "payload")
	if err != nil {
		return nil, err
	}
	timeout, err := millis(args, "timeout_ms")
	if err != nil {
		return nil, err
	}
	id, err := bounded(args, "Send", func() (pulsar.MessageID, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return producer.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)})
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"message_id": id.String()}, nil
}

var subscriptionTypes = map[string]pulsar.SubscriptionType{
	"Exclusive": pulsar.Exclusive, "Shared": pulsar.Shared, "Failover": pulsar.Failover, "Key_Shared": pulsar.KeyShared,
}

func (d *driver) subscribe(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "client")
	if err != nil {
		return nil, err
	}
	client, ok := value.(pulsar.Client)
	if !ok {
		return nil, badRequest{"client names no client"}
	}
	topic, err := text(args, "topic")
	if err != nil {
		return nil, err
	}
	subscription, err := text(args, "subscription")
	if err != nil {
		return nil, err
	}
	kind, err := text(args, "sub_type")
	if err != nil {
		return nil, err
	}
	subType, ok := subscriptionTypes[kind]
	if !ok {
		return nil, badRequest{fmt.Sprintf("sub_type %q is not one of Exclusive, Shared, Failover, Key_Shared", kind)}
	}
	position := pulsar.SubscriptionPositionLatest
	if start, present := optionalText(args, "initial_position"); present {
		switch start {
		case "Latest":
		case "Earliest":
			position = pulsar.SubscriptionPositionEarliest
		default:
			return nil, badRequest{fmt.Sprintf("initial_position %q is not Latest or Earliest", start)}
		}
	}
	consumer, err := bounded(args, "Subscribe", func() (pulsar.Consumer, error) {
		return client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: subscription, Type: subType,
			SubscriptionInitialPosition: position, AckWithResponse: true})
	})
	if err != nil {
		return nil, err
	}
	return d.add("s", consumer), nil
}

func (d *driver) receive(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "consumer")
	if err != nil {
		return nil, err
	}
	consumer, ok := value.(pulsar.Consumer)
	if !ok {
		return nil, badRequest{"consumer names no consumer"}
	}
	wait, err := millis(args, "timeout_ms")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	message, err := consumer.Receive(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return map[string]any{"message": nil}, nil
		}
		return nil, err
	}
	d.mu.Lock()
	d.tokens++
	token := fmt.Sprintf("m%d", d.tokens)
	d.received[token] = received{consumer, message}
	d.mu.Unlock()
	return map[string]any{"message": map[string]any{
		"payload": string(message.Payload()), "message_id": token, "topic": message.Topic(),
		"redelivery_count": message.RedeliveryCount(),
	}}, nil
}

func (d *driver) acknowledge(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "consumer")
	if err != nil {
		return nil, err
	}
	consumer, ok := value.(pulsar.Consumer)
	if !ok {
		return nil, badRequest{"consumer names no consumer"}
	}
	token, err := text(args, "message_id")
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	got, found := d.received[token]
	delete(d.received, token)
	d.mu.Unlock()
	if !found {
		return nil, badRequest{fmt.Sprintf("no received message %s to acknowledge", token)}
	}
	_, err = bounded(args, "Ack", func() (struct{}, error) { return struct{}{}, consumer.Ack(got.message) })
	if err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (d *driver) createAdmin(args map[string]json.RawMessage) (map[string]any, error) {
	url, err := text(args, "admin_url")
	if err != nil {
		return nil, err
	}
	config := &pulsaradmin.Config{WebServiceURL: url}
	if token, present := optionalText(args, "auth_token"); present {
		config.Token = token
	}
	if trust, present := optionalText(args, "tls_trust_certs_file"); present {
		config.TLSTrustCertsFilePath = trust
		config.TLSEnableHostnameVerification = true
	}
	client, err := pulsaradmin.NewClient(config)
	if err != nil {
		return nil, err
	}
	return d.add("a", admin{client}), nil
}

func (d *driver) getPartitionedTopicMetadata(args map[string]json.RawMessage) (map[string]any, error) {
	value, err := d.get(args, "admin")
	if err != nil {
		return nil, err
	}
	a, ok := value.(admin)
	if !ok {
		return nil, badRequest{"admin names no admin"}
	}
	topic, err := text(args, "topic")
	if err != nil {
		return nil, err
	}
	name, err := utils.GetTopicName(topic)
	if err != nil {
		return nil, err
	}
	timeout, err := millis(args, "timeout_ms")
	if err != nil {
		return nil, err
	}
	metadata, err := bounded(args, "Topics().GetMetadata", func() (utils.PartitionedTopicMetadata, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return a.client.Topics().GetMetadataWithContext(ctx, *name)
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"partitions": metadata.Partitions}, nil
}
