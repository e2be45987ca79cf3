package conformance.driver;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

/** Reading a request's "args": a missing or mistyped argument is the harness's error, not the client's. */
public final class Args {
    private Args() {
    }

    /** The request was wrong (answer "error"). */
    public static final class BadRequest extends Exception {
        public BadRequest(String message) {
            super(message);
        }
    }

    public static String string(JsonObject args, String name) throws BadRequest {
        JsonElement value = args.get(name);
        if (value == null || !value.isJsonPrimitive() || !value.getAsJsonPrimitive().isString()) {
            throw new BadRequest("argument \"" + name + "\" must be a string");
        }
        return value.getAsString();
    }

    public static long number(JsonObject args, String name) throws BadRequest {
        JsonElement value = args.get(name);
        if (value == null || !value.isJsonPrimitive() || !value.getAsJsonPrimitive().isNumber()) {
            throw new BadRequest("argument \"" + name + "\" must be a number");
        }
        return value.getAsLong();
    }

    /** A boolean argument, or null when the request leaves it out. */
    public static Boolean optionalBoolean(JsonObject args, String name) throws BadRequest {
        JsonElement value = args.get(name);
        if (value == null || value.isJsonNull()) {
            return null;
        }
        if (!value.isJsonPrimitive() || !value.getAsJsonPrimitive().isBoolean()) {
            throw new BadRequest("argument \"" + name + "\" must be true, false or absent");
        }
        return value.getAsBoolean();
    }

    public static String optionalString(JsonObject args, String name, String fallback) throws BadRequest {
        return args.has(name) ? string(args, name) : fallback;
    }
}
