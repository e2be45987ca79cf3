package conformance.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * What a client library threw, as the protocol's "raised" value: the exception's class (binary
 * name, e.g. org.apache.pulsar.client.api.PulsarClientException$NotFoundException), its message
 * and the classes of its causes.
 *
 * <p>Rule: CompletionException and ExecutionException are unwrapped first: a future that failed
 * reports the client's own exception, which is what an application catches.
 */
public final class Raised {
    private Raised() {
    }

    public static Throwable unwrap(Throwable thrown) {
        Throwable current = thrown;
        while ((current instanceof CompletionException || current instanceof ExecutionException)
                && current.getCause() != null) {
            current = current.getCause();
        }
        return current;
    }

    public static JsonObject of(Throwable thrown) {
        Throwable exception = unwrap(thrown);
        JsonObject raised = new JsonObject();
        raised.addProperty("class", exception.getClass().getName());
        raised.addProperty("message", exception.getMessage());
        JsonArray causes = new JsonArray();
        for (Throwable cause = exception.getCause(); cause != null && cause != cause.getCause();
                cause = cause.getCause()) {
            causes.add(cause.getClass().getName());
            if (causes.size() >= 8) {
                break;
            }
        }
        raised.add("causes", causes);
        return raised;
    }
}
