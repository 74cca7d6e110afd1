package hotstandby.refcluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.PulsarStandaloneStarter;
import org.apache.pulsar.metadata.api.GetResult;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pulsar's standalone (PulsarStandaloneStarter, same arguments) started as ZooKeeper would after
 * the previous process's session ended: the ephemeral nodes that process left in the RocksDB
 * metadata store (--metadata-dir) are deleted before the standalone opens it.
 *
 * <p>A SIGKILLed standalone leaves its bookie's registration (/ledgers/available/HOST:PORT) in
 * RocksDB. The restarted bookie finds it "already locked", and while its lock takes it over the
 * store deletes it (RocksdbMetadataStore.storeGet: an ephemeral node of an earlier instance). The
 * Deleted notification goes out on the store's executor; when it arrives after the new lock is
 * registered (a race, lost now and then), the lock revalidates (ResourceLockImpl.revalidate) and
 * compares its BookieServiceInfo with the one read back, a class without equals() in BookKeeper
 * 4.17.2: they never match, so the lock deletes and rewrites its own node, which notifies it
 * again, without end ("Lock on resource ... was invalidated"), and clients at times see no
 * bookie. With no stale node there is no such notification. See docs/refcluster.md.
 */
public final class EphemeralNodesDroppingStandalone {
    private static final Logger LOG = LoggerFactory.getLogger(EphemeralNodesDroppingStandalone.class);
    private static final long TIMEOUT_S = 30;

    private EphemeralNodesDroppingStandalone() {
    }

    public static void main(String[] args) throws Exception {
        Path metadata = metadataDir(args);
        if (metadata != null && Files.isDirectory(metadata)) {
            // The URL PulsarStandalone builds for the same folder.
            String url = "rocksdb://" + metadata.toAbsolutePath();
            MetadataStoreExtended store = MetadataStoreExtended.create(url, MetadataStoreConfig.builder().build());
            try {
                int nodes = dropEphemeral(store, "/");
                LOG.info("Read all {} nodes of {} before the start: no ephemeral node of an earlier process is left",
                        nodes, url);
            } finally {
                store.close();
            }
        }
        PulsarStandaloneStarter.main(args);
    }

    private static Path metadataDir(String[] args) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--metadata-dir")) {
                return Paths.get(args[i + 1]);
            }
        }
        return null;
    }

    /**
     * Reads every node under path and deletes the ephemeral ones; how many nodes there are. No
     * process holds this store yet, so every ephemeral node in it is an earlier process's.
     * RocksdbMetadataStore deletes such a node itself (one of an earlier instance) when a read or
     * a listing meets it, logging "Deleting path"; the explicit delete covers a store that does not.
     */
    private static int dropEphemeral(MetadataStoreExtended store, String path) throws Exception {
        int nodes = 0;
        List<String> children = store.getChildren(path).get(TIMEOUT_S, TimeUnit.SECONDS);
        for (String child : children) {
            if (child.isEmpty()) {
                continue;  // the node path itself, were it stored
            }
            String childPath = path.equals("/") ? "/" + child : path + "/" + child;
            Optional<GetResult> node = store.get(childPath).get(TIMEOUT_S, TimeUnit.SECONDS);
            if (node.isPresent() && node.get().getStat().isEphemeral()) {
                store.delete(childPath, Optional.empty()).get(TIMEOUT_S, TimeUnit.SECONDS);
            } else {
                nodes += 1 + dropEphemeral(store, childPath);
            }
        }
        return nodes;
    }
}
