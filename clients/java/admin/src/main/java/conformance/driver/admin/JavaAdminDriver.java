package conformance.driver.admin;

import com.google.gson.JsonObject;
import conformance.driver.Args;
import conformance.driver.DriverLoop;
import conformance.driver.Handles;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminBuilder;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.common.partition.PartitionedTopicMetadata;

/**
 * The java-admin driver: org.apache.pulsar:pulsar-client-admin behind the client-driver protocol
 * (clients/README.md).
 *
 * <p>"admin.get_partitioned_topic_metadata" is topics().getPartitionedTopicMetadata(topic),
 * the call pulsar-admin makes; it sends no checkAllowAutoCreation ("Regarding the pulsar-admin API
 * ... it always sets the param checkAllowAutoCreation to false and can not be set manually",
 * PIP-344, Background knowledge; TopicsImpl#getPartitionedTopicMetadataAsync at v4.0.8 builds the
 * path ".../partitions" with no query parameter).
 *
 * <p>Every call waits at most the request's "timeout_ms"; the admin's own request timeout
 * is set to the same bound.
 */
public final class JavaAdminDriver {
    private final Handles handles = new Handles();

    public static void main(String[] argv) throws Exception {
        new JavaAdminDriver().loop().serve();
    }

    DriverLoop loop() {
        return new DriverLoop("java-admin", "org.apache.pulsar:pulsar-client-admin",
                DriverLoop.pulsarVersion(PulsarAdmin.class), handles)
                .options("auth_token", "tls_trust_certs_file")
                .command("admin.create", this::createAdmin)
                .command("admin.get_partitioned_topic_metadata", this::partitionedTopicMetadata);
    }

    private JsonObject createAdmin(JsonObject args) throws Exception {
        int timeoutMs = (int) Args.number(args, "timeout_ms");
        PulsarAdminBuilder builder = PulsarAdmin.builder()
                .serviceHttpUrl(Args.string(args, "admin_url"))
                .connectionTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .readTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .requestTimeout(timeoutMs, TimeUnit.MILLISECONDS);
        // The protocol's optional create arguments (clients/README.md, "options").
        String token = Args.optionalString(args, "auth_token", null);
        if (token != null) {
            builder.authentication(AuthenticationFactory.token(token));
        }
        String trust = Args.optionalString(args, "tls_trust_certs_file", null);
        if (trust != null) {
            builder.tlsTrustCertsFilePath(trust).enableTlsHostnameVerification(true);
        }
        PulsarAdmin admin = builder.build();
        JsonObject result = new JsonObject();
        result.addProperty("handle", handles.add("a", admin, admin::close));
        return result;
    }

    private JsonObject partitionedTopicMetadata(JsonObject args) throws Exception {
        PulsarAdmin admin = handles.get(Args.string(args, "admin"), PulsarAdmin.class);
        PartitionedTopicMetadata metadata = admin.topics()
                .getPartitionedTopicMetadataAsync(Args.string(args, "topic"))
                .get(Args.number(args, "timeout_ms"), TimeUnit.MILLISECONDS);
        JsonObject result = new JsonObject();
        result.addProperty("partitions", metadata.partitions);
        return result;
    }
}
