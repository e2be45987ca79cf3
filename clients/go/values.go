package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

func text(args map[string]json.RawMessage, key string) (string, error) {
	raw, present := args[key]
	var value string
	if !present || json.Unmarshal(raw, &value) != nil || value == "" {
		return "", badRequest{fmt.Sprintf("missing string argument %q", key)}
	}
	return value, nil
}

func optionalText(args map[string]json.RawMessage, key string) (string, bool) {
	raw, present := args[key]
	var value string
	if !present || json.Unmarshal(raw, &value) != nil || value == "" {
		return "", false
	}
	return value, true
}

func number(args map[string]json.RawMessage, key string) (int64, error) {
	raw, present := args[key]
	var value int64
	if !present || json.Unmarshal(raw, &value) != nil || value < 1 {
		return 0, badRequest{fmt.Sprintf("missing positive integer argument %q", key)}
	}
	return value, nil
}

// resultNames names the pulsar.Result values a producer's or consumer's creation can end with, as the
// library's source names its constants; others are reported by number.
var resultNames = map[pulsar.Result]string{
	pulsar.UnknownError: "UnknownError", pulsar.TimeoutError: "TimeoutError", pulsar.LookupError: "LookupError",
	pulsar.ConnectError: "ConnectError", pulsar.AuthenticationError: "AuthenticationError",
	pulsar.AuthorizationError: "AuthorizationError", pulsar.BrokerMetadataError: "BrokerMetadataError",
	pulsar.ConsumerBusy: "ConsumerBusy", pulsar.NotConnectedError: "NotConnectedError",
	pulsar.TopicNotFound: "TopicNotFound", pulsar.SubscriptionNotFound: "SubscriptionNotFound",
	pulsar.InvalidTopicName: "InvalidTopicName", pulsar.ServiceUnitNotReady: "ServiceUnitNotReady",
	pulsar.OperationNotSupported: "OperationNotSupported", pulsar.ProducerClosed: "ProducerClosed",
	pulsar.ConsumerClosed: "ConsumerClosed", pulsar.InvalidConfiguration: "InvalidConfiguration",
}

type causer interface{ Cause() error }

// raisedOf is the protocol's "raised": the innermost error's Go type as %T prints it, the whole
// message, and the type of every error from the outermost in (a pulsar.Error adds its Result's name).
func raisedOf(err error) map[string]any {
	causes := []string{}
	inner := err
	for current := err; current != nil; {
		inner = current
		causes = append(causes, fmt.Sprintf("%T", current))
		var typed *pulsar.Error
		if errors.As(current, &typed) && typed == current {
			name, known := resultNames[typed.Result()]
			if !known {
				name = fmt.Sprintf("%d", int(typed.Result()))
			}
			causes = append(causes, "pulsar.Result."+name)
		}
		if next := errors.Unwrap(current); next != nil {
			current = next
		} else if c, ok := current.(causer); ok && c.Cause() != current {
			current = c.Cause()
		} else {
			current = nil
		}
	}
	return map[string]any{"class": fmt.Sprintf("%T", inner), "message": err.Error(), "causes": causes}
}
