package conformance.driver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The objects a driver opened for the harness (clients, producers, consumers, admins), by the
 * handle string the harness names them with.
 *
 * <p>Rule: handles are never reused within a process ("c1", "p2", ...), and closeAll closes them
 * newest first, so a producer or consumer closes before the client that made it.
 */
public final class Handles {
    /** Something a handle names; close is bounded by the driver that opened it. */
    @FunctionalInterface
    public interface Closer {
        void close() throws Exception;
    }

    private record Entry(Object value, Closer closer) {
    }

    private final Map<String, Entry> open = new LinkedHashMap<>();
    private long next = 1;

    public String add(String prefix, Object value, Closer closer) {
        String handle = prefix + next++;
        open.put(handle, new Entry(value, closer));
        return handle;
    }

    public <T> T get(String handle, Class<T> type) throws Args.BadRequest {
        Entry entry = open.get(handle);
        if (entry == null) {
            throw new Args.BadRequest("no open handle " + handle);
        }
        if (!type.isInstance(entry.value())) {
            throw new Args.BadRequest("handle " + handle + " is not a " + type.getSimpleName());
        }
        return type.cast(entry.value());
    }

    public void close(String handle) throws Exception {
        Entry entry = open.remove(handle);
        if (entry == null) {
            throw new Args.BadRequest("no open handle " + handle);
        }
        entry.closer().close();
    }

    /** Closes every handle, newest first; a failing close does not stop the others. */
    public int closeAll() {
        List<String> names = new ArrayList<>(open.keySet());
        int closed = 0;
        for (int i = names.size() - 1; i >= 0; i--) {
            Entry entry = open.remove(names.get(i));
            try {
                entry.closer().close();
            } catch (Exception | LinkageError e) {
                System.err.println("closing " + names.get(i) + " failed: " + e);
            }
            closed++;
        }
        return closed;
    }
}
