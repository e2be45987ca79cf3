package conformance.driver;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The client-driver protocol, version 1 (clients/protocol/v1.schema.json, clients/README.md).
 *
 * <p>One JSON request per line on stdin, one JSON answer per line on stdout, in order. The
 * real stdout is kept for answers and System.out is pointed at stderr before any client class loads,
 * so a library that prints cannot corrupt the answer stream.
 *
 * <p>Every answer carries the request's id and exactly one of "ok" (the result),
 * "raised" (the client library threw: its exception class and message), "unsupported" (this
 * driver or this library version cannot perform the command) or "error" (the request itself was
 * wrong: unknown command, missing argument, malformed JSON; the id is null when it could not be
 * read).
 *
 * <p>"hello" must come first and name protocol 1; any other version is refused with
 * "error" and every later request is refused too, so a harness of another version stops at once.
 *
 * <p>A library exception is unwrapped from CompletionException/ExecutionException to the
 * exception the client raised (Raised#of), since the wrappers say nothing about the answer.
 *
 * <p>"shutdown" answers and then ends the process after closing every handle; end of input
 * does the same.
 *
 * <p>The JVM's temporary folder is the TMPDIR the harness gives the process (the JVM itself
 * ignores TMPDIR), so the native libraries the client unpacks go with the folder the harness removes.
 */
public final class DriverLoop {
    public static final int PROTOCOL = 1;

    // The answer stream and the temporary folder: initialised when the class is, which a driver's main does before it touches its client.
    private static final PrintStream ANSWERS = claimStdout();

    static {
        String scratch = System.getenv("TMPDIR");
        if (scratch != null && !scratch.isEmpty()) {
            System.setProperty("java.io.tmpdir", scratch);
        }
    }

    private static PrintStream claimStdout() {
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        return answers;
    }

    /** One command: arguments in, result out; throws to answer "raised". */
    @FunctionalInterface
    public interface Command {
        JsonObject run(JsonObject args) throws Exception;
    }

    private final String driverName;
    private final String library;
    private final String libraryVersion;
    private final Handles handles;
    private final Map<String, Command> commands = new LinkedHashMap<>();
    private final java.util.List<String> options = new java.util.ArrayList<>();
    private final Gson gson = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();
    private Boolean agreed; // null until hello; false after a refused hello (every later request refused)
    private boolean stopping;

    public DriverLoop(String driverName, String library, String libraryVersion, Handles handles) {
        this.driverName = driverName;
        this.library = library;
        this.libraryVersion = libraryVersion;
        this.handles = handles;
        commands.put("noop", args -> new JsonObject());
        commands.put("close", args -> {
            handles.close(Args.string(args, "handle"));
            return new JsonObject();
        });
        commands.put("reset", args -> {
            JsonObject result = new JsonObject();
            result.addProperty("closed", handles.closeAll());
            return result;
        });
    }

    /** The Pulsar release on the classpath (PulsarVersion, in every line), else the jar's version. */
    public static String pulsarVersion(Class<?> fromJar) {
        try {
            return (String) Class.forName("org.apache.pulsar.PulsarVersion").getMethod("getVersion").invoke(null);
        } catch (ReflectiveOperationException | LinkageError e) {
            return String.valueOf(fromJar.getPackage().getImplementationVersion());
        }
    }

    public DriverLoop command(String name, Command command) {
        commands.put(name, command);
        return this;
    }

    /** Optional create arguments this driver honours (auth_token, tls_trust_certs_file), listed in hello. */
    public DriverLoop options(String... names) {
        options.addAll(java.util.Arrays.asList(names));
        return this;
    }

    /** Serves requests, one answer per line in order, until "shutdown" or end of input. */
    public void serve() throws Exception {
        PrintStream answers = ANSWERS;
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = requests.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonObject answer = answer(line);
                answers.print(gson.toJson(answer));
                answers.print('\n');
                answers.flush();
                if (stopping) {
                    break;
                }
            }
        } finally {
            handles.closeAll();
        }
    }

    JsonObject answer(String line) {
        JsonObject request;
        try {
            JsonElement parsed = JsonParser.parseString(line);
            if (!parsed.isJsonObject()) {
                return error(JsonNull.INSTANCE, "a request must be a JSON object, got: " + clip(line));
            }
            request = parsed.getAsJsonObject();
        } catch (JsonParseException e) {
            return error(JsonNull.INSTANCE, "request is not valid JSON (" + e.getMessage() + "): " + clip(line));
        }
        JsonElement id = request.has("id") ? request.get("id") : JsonNull.INSTANCE;
        JsonElement cmdElement = request.get("cmd");
        if (cmdElement == null || !cmdElement.isJsonPrimitive()) {
            return error(id, "request has no \"cmd\" string");
        }
        String cmd = cmdElement.getAsString();
        JsonObject args = request.has("args") && request.get("args").isJsonObject()
                ? request.getAsJsonObject("args") : new JsonObject();
        if (cmd.equals("hello")) {
            return hello(id, args);
        }
        if (agreed == null || !agreed) {
            return error(id, agreed == null ? "send hello with protocol " + PROTOCOL + " first"
                    : "hello was refused: this driver speaks protocol " + PROTOCOL + " only");
        }
        if (cmd.equals("shutdown")) {
            stopping = true;
            return ok(id, new JsonObject());
        }
        Command command = commands.get(cmd);
        if (command == null) {
            return error(id, "unknown command " + cmd + "; this driver knows " + commandList());
        }
        try {
            return ok(id, command.run(args));
        } catch (Args.BadRequest e) {
            return error(id, cmd + ": " + e.getMessage());
        } catch (Unsupported e) {
            JsonObject answer = base(id);
            answer.addProperty("unsupported", e.getMessage());
            return answer;
        } catch (Exception | LinkageError e) {
            JsonObject answer = base(id);
            answer.add("raised", Raised.of(e));
            return answer;
        }
    }

    private JsonObject hello(JsonElement id, JsonObject args) {
        JsonElement asked = args.get("protocol");
        if (asked == null || !asked.isJsonPrimitive() || !asked.getAsJsonPrimitive().isNumber()
                || asked.getAsInt() != PROTOCOL) {
            agreed = false;
            return error(id, "protocol " + asked + " is not spoken here; this driver speaks protocol " + PROTOCOL);
        }
        agreed = true;
        JsonObject result = new JsonObject();
        result.addProperty("protocol", PROTOCOL);
        result.addProperty("driver", driverName);
        result.addProperty("language", "java");
        result.addProperty("runtime", System.getProperty("java.version"));
        result.addProperty("library", library);
        result.addProperty("library_version", libraryVersion);
        result.add("commands", gson.toJsonTree(commandList()));
        result.add("options", gson.toJsonTree(options));
        return ok(id, result);
    }

    private java.util.List<String> commandList() {
        java.util.List<String> names = new java.util.ArrayList<>(commands.keySet());
        names.add(0, "hello");
        names.add("shutdown");
        return names;
    }

    private static JsonObject base(JsonElement id) {
        JsonObject answer = new JsonObject();
        answer.add("id", id);
        return answer;
    }

    private static JsonObject ok(JsonElement id, JsonObject result) {
        JsonObject answer = base(id);
        answer.add("ok", result);
        return answer;
    }

    private static JsonObject error(JsonElement id, String message) {
        JsonObject answer = base(id);
        answer.addProperty("error", message);
        return answer;
    }

    private static String clip(String text) {
        return text.length() <= 200 ? text : text.substring(0, 200) + "...";
    }

    /** Thrown by a command this driver or library version cannot perform (answer "unsupported"). */
    public static final class Unsupported extends Exception {
        public Unsupported(String reason) {
            super(reason);
        }
    }
}
