import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The e2e stack's Kafka admin work in one JVM (used by tests/e2e/stack.d/kafka.sh;
 * compiled once into $FORGE_CACHE_DIR/kafka/tools):
 *
 *   StackAdmin BOOTSTRAP ready TIMEOUT_S
 *   StackAdmin BOOTSTRAP ensure TIMEOUT_S PARTITIONS [OPTION...] NAME[:KEY=VALUE[,KEY=VALUE...]]...
 *   StackAdmin BOOTSTRAP keystore TIMEOUT_S LISTENER PATH|-
 *
 * ensure's options (the secured listener's principals, issue 27):
 *   --scram USER=PASSWORD_FILE  upsert USER's SCRAM-SHA-512 credential with
 *                               the file's first line (every up: idempotent)
 *   --acls FILE                 create the ACLs of deploy/kafka/acls.tsv ...
 *   --role ROLE=USER            ... for these roles, as User:USER ...
 *   --set VAR=VALUE             ... with ${VAR} in a name replaced by VALUE
 *                               (a line naming a variable not set: an error)
 *
 * ready:  wait until the broker answers a metadata request that lists at least
 *         one (unfenced) broker; print "CLUSTER_ID BROKERS".
 * ensure: ready, then create the missing topics (PARTITIONS partitions, or
 *         the topic's own partitions=N, which is no topic config; the
 *         brokers' default.replication.factor: kafka.sh sets it to its node
 *         count, retried until that many brokers are registered), check the partition count of existing ones,
 *         set the given topic configs where they differ, and wait until every
 *         partition has a leader; then the SCRAM users and the ACLs
 *         (creating an ACL that exists is a no-op).
 * keystore: set (PATH) or delete (-) the broker's dynamic
 *         listener.name.LISTENER.ssl.keystore.location: the broker reloads
 *         its certificate from the file (a renewed one) without a restart.
 *
 * Exit 0 on success, 1 when the broker does not answer metadata in time,
 * 3 when the topics cannot be set up (reason on stderr), 2 on bad usage.
 */
public final class StackAdmin {
    private static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    private final Admin admin;
    private final long deadline;

    private StackAdmin(String bootstrap, int timeoutS) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "forge-stack-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Math.max(timeoutS, 5) * 1000);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, 100);
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
        p.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, 100);
        p.put(AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 500);
        // The default ("rebootstrap") spins, logging a line each time, while
        // the only broker is not listening yet.
        p.put(AdminClientConfig.METADATA_RECOVERY_STRATEGY_CONFIG, "none");
        admin = Admin.create(p);
        deadline = System.currentTimeMillis() + timeoutS * 1000L;
    }

    private int left() throws Failure {
        long ms = deadline - System.currentTimeMillis();
        if (ms <= 0) {
            throw new Failure("timed out");
        }
        return (int) Math.min(ms, 5000);
    }

    private static Throwable cause(ExecutionException e) {
        return e.getCause() != null ? e.getCause() : e;
    }

    private static void pause() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Wait until the broker answers metadata naming at least one broker. */
    String ready() throws Failure, InterruptedException {
        Throwable last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                DescribeClusterResult r = admin.describeCluster(new DescribeClusterOptions().timeoutMs(left()));
                Collection<Node> nodes = r.nodes().get();
                String id = r.clusterId().get();
                if (!nodes.isEmpty()) {
                    return id + " " + nodes.size();
                }
                last = new Exception("the metadata lists no broker yet");
            } catch (ExecutionException e) {
                last = cause(e);
            }
            pause();
        }
        throw new Failure("no metadata answer from the broker: " + last);
    }

    /** Create, check and configure the topics; wait for their leaders. */
    void ensure(int defaultPartitions, Map<String, Map<String, String>> topics) throws Failure, InterruptedException {
        Map<String, Integer> want = new LinkedHashMap<>();
        for (Map.Entry<String, Map<String, String>> t : topics.entrySet()) {
            String n = t.getValue().remove("partitions");
            try {
                want.put(t.getKey(), n == null ? defaultPartitions : Integer.parseInt(n));
            } catch (NumberFormatException e) {
                throw new Failure("topic " + t.getKey() + ": partitions=" + n + "?");
            }
        }
        List<String> pending = new ArrayList<>(topics.keySet());
        while (!pending.isEmpty()) {
            List<NewTopic> create = new ArrayList<>();
            for (String name : pending) {
                create.add(new NewTopic(name, Optional.of(want.get(name)), Optional.empty()).configs(topics.get(name)));
            }
            CreateTopicsResult r = admin.createTopics(create, new CreateTopicsOptions().timeoutMs(left()));
            List<String> retry = new ArrayList<>();
            Throwable last = null;
            for (String name : pending) {
                try {
                    r.values().get(name).get();
                    System.out.println("topic " + name + ": created");
                } catch (ExecutionException e) {
                    Throwable c = cause(e);
                    if (c instanceof TopicExistsException) {
                        System.out.println("topic " + name + ": exists");
                    } else if (c instanceof RetriableException || c instanceof InvalidReplicationFactorException) {
                        // InvalidReplicationFactor: the broker is not registered/unfenced yet.
                        retry.add(name);
                        last = c;
                    } else {
                        throw new Failure("create topic " + name + ": " + c);
                    }
                }
            }
            pending = retry;
            if (!pending.isEmpty()) {
                if (System.currentTimeMillis() >= deadline) {
                    throw new Failure("create topics " + pending + ": " + last);
                }
                pause();
            }
        }

        List<String> problems = new ArrayList<>();
        Map<String, TopicDescription> described = describe(topics.keySet());
        for (TopicDescription d : described.values()) {
            int n = d.partitions().size();
            if (n != want.get(d.name())) {
                problems.add("topic " + d.name() + " has " + n + " partitions, want " + want.get(d.name()));
            }
        }
        if (!problems.isEmpty()) {
            throw new Failure(String.join("; ", problems));
        }

        Map<ConfigResource, Collection<AlterConfigOp>> alter = new LinkedHashMap<>();
        List<ConfigResource> withConfigs = new ArrayList<>();
        for (Map.Entry<String, Map<String, String>> t : topics.entrySet()) {
            if (!t.getValue().isEmpty()) {
                withConfigs.add(new ConfigResource(ConfigResource.Type.TOPIC, t.getKey()));
            }
        }
        if (!withConfigs.isEmpty()) {
            Map<ConfigResource, Config> current;
            try {
                current = admin.describeConfigs(withConfigs).all().get();
            } catch (ExecutionException e) {
                throw new Failure("describe topic configs: " + cause(e));
            }
            for (ConfigResource res : withConfigs) {
                List<AlterConfigOp> ops = new ArrayList<>();
                for (Map.Entry<String, String> kv : topics.get(res.name()).entrySet()) {
                    ConfigEntry have = current.get(res).get(kv.getKey());
                    if (have == null || !kv.getValue().equals(have.value())) {
                        ops.add(new AlterConfigOp(new ConfigEntry(kv.getKey(), kv.getValue()), AlterConfigOp.OpType.SET));
                        System.out.println("topic " + res.name() + ": set " + kv.getKey() + "=" + kv.getValue());
                    }
                }
                if (!ops.isEmpty()) {
                    alter.put(res, ops);
                }
            }
            if (!alter.isEmpty()) {
                try {
                    admin.incrementalAlterConfigs(alter).all().get();
                } catch (ExecutionException e) {
                    throw new Failure("alter topic configs: " + cause(e));
                }
            }
        }

        while (true) {
            List<String> leaderless = new ArrayList<>();
            for (TopicDescription d : described.values()) {
                for (TopicPartitionInfo p : d.partitions()) {
                    if (p.leader() == null || p.leader().isEmpty()) {
                        leaderless.add(d.name() + "-" + p.partition());
                    }
                }
            }
            if (leaderless.isEmpty()) {
                return;
            }
            if (System.currentTimeMillis() >= deadline) {
                throw new Failure("partitions without a leader: " + leaderless);
            }
            pause();
            described = describe(topics.keySet());
        }
    }

    private Map<String, TopicDescription> describe(Collection<String> names) throws Failure, InterruptedException {
        try {
            return admin.describeTopics(names).allTopicNames().get();
        } catch (ExecutionException e) {
            throw new Failure("describe topics: " + cause(e));
        }
    }

    /** Upsert each user's SCRAM-SHA-512 credential (password: the file's first line). */
    void scram(Map<String, String> users) throws Failure, InterruptedException {
        if (users.isEmpty()) {
            return;
        }
        List<UserScramCredentialAlteration> ups = new ArrayList<>();
        for (Map.Entry<String, String> u : users.entrySet()) {
            String password;
            try {
                password = Files.readAllLines(Paths.get(u.getValue()), StandardCharsets.UTF_8).get(0).trim();
            } catch (IOException | IndexOutOfBoundsException e) {
                throw new Failure("password of " + u.getKey() + " from " + u.getValue() + ": " + e);
            }
            ups.add(new UserScramCredentialUpsertion(u.getKey(),
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password));
        }
        try {
            admin.alterUserScramCredentials(ups).all().get();
        } catch (ExecutionException e) {
            throw new Failure("SCRAM credentials: " + cause(e));
        }
        System.out.println("scram users: " + String.join(" ", users.keySet()));
    }

    private static String expand(String name, Map<String, String> vars, int lineNo) throws Failure {
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (i < name.length()) {
            int at = name.indexOf("${", i);
            if (at < 0) {
                out.append(name, i, name.length());
                break;
            }
            int end = name.indexOf('}', at);
            if (end < 0) {
                throw new Failure("acls line " + lineNo + ": unterminated ${ in " + name);
            }
            String var = name.substring(at + 2, end);
            String value = vars.get(var);
            if (value == null) {
                throw new Failure("acls line " + lineNo + ": " + var + " is not set (--set)");
            }
            out.append(name, i, at).append(value);
            i = end + 1;
        }
        return out.toString();
    }

    /** The ACL file's lines of the given roles, their names expanded. */
    static List<AclBinding> acls(String file, Map<String, String> roles, Map<String, String> vars) throws Failure {
        List<String> lines;
        try {
            lines = Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new Failure("reading " + file + ": " + e);
        }
        List<AclBinding> out = new ArrayList<>();
        boolean header = true;
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n);
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\t");
            if (header) { // role, commands, resource, pattern, name, operation, why
                header = false;
                continue;
            }
            if (f.length < 6) {
                throw new Failure(file + " line " + (n + 1) + ": want 7 tab-separated columns");
            }
            String user = roles.get(f[0]);
            if (user == null) {
                continue;
            }
            ResourceType type;
            switch (f[2]) {
                case "topic": type = ResourceType.TOPIC; break;
                case "group": type = ResourceType.GROUP; break;
                case "transactional-id": type = ResourceType.TRANSACTIONAL_ID; break;
                case "cluster": type = ResourceType.CLUSTER; break;
                default: throw new Failure(file + " line " + (n + 1) + ": resource " + f[2] + "?");
            }
            try {
                out.add(new AclBinding(
                        new ResourcePattern(type, expand(f[4], vars, n + 1), PatternType.valueOf(f[3])),
                        new AccessControlEntry("User:" + user, "*", AclOperation.valueOf(f[5]),
                                AclPermissionType.ALLOW)));
            } catch (IllegalArgumentException e) {
                throw new Failure(file + " line " + (n + 1) + ": " + e.getMessage());
            }
        }
        return out;
    }

    void createAcls(List<AclBinding> bindings) throws Failure, InterruptedException {
        if (bindings.isEmpty()) {
            return;
        }
        try {
            admin.createAcls(bindings).all().get();
        } catch (ExecutionException e) {
            throw new Failure("create ACLs: " + cause(e));
        }
        System.out.println("acls: " + bindings.size() + " in place");
    }

    /** Set (or delete, path "-") the listener's dynamic keystore location on every broker. */
    void keystore(String listener, String path) throws Failure, InterruptedException {
        String key = "listener.name." + listener.toLowerCase() + ".ssl.keystore.location";
        Map<ConfigResource, Collection<AlterConfigOp>> alter = new LinkedHashMap<>();
        try {
            for (Node node : admin.describeCluster().nodes().get()) {
                ConfigResource res = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
                alter.put(res, List.of(path.equals("-")
                        ? new AlterConfigOp(new ConfigEntry(key, ""), AlterConfigOp.OpType.DELETE)
                        : new AlterConfigOp(new ConfigEntry(key, path), AlterConfigOp.OpType.SET)));
            }
            admin.incrementalAlterConfigs(alter).all().get();
        } catch (ExecutionException e) {
            throw new Failure(key + ": " + cause(e));
        }
        System.out.println(key + (path.equals("-") ? " deleted" : " = " + path));
    }

    private static int usage() {
        System.err.println("usage: StackAdmin BOOTSTRAP ready TIMEOUT_S\n"
                + "       StackAdmin BOOTSTRAP ensure TIMEOUT_S PARTITIONS [--scram USER=PASSWORD_FILE]...\n"
                + "                  [--acls FILE [--role ROLE=USER]... [--set VAR=VALUE]...] NAME[:KEY=VALUE[,KEY=VALUE...]]...\n"
                + "                  (KEY partitions: the topic's partition count instead of PARTITIONS)\n"
                + "       StackAdmin BOOTSTRAP keystore TIMEOUT_S LISTENER PATH|-");
        return 2;
    }

    private static int run(String[] args) throws InterruptedException {
        if (args.length < 3) {
            return usage();
        }
        String verb = args[1];
        int timeoutS;
        int partitions = 0;
        Map<String, Map<String, String>> topics = new LinkedHashMap<>();
        Map<String, String> users = new LinkedHashMap<>();
        Map<String, String> roles = new LinkedHashMap<>();
        Map<String, String> vars = new LinkedHashMap<>();
        String aclFile = null;
        try {
            timeoutS = Integer.parseInt(args[2]);
            if (verb.equals("ensure")) {
                if (args.length < 5) {
                    return usage();
                }
                partitions = Integer.parseInt(args[3]);
                for (int i = 4; i < args.length; i++) {
                    if (args[i].startsWith("--")) {
                        if (i + 1 >= args.length) {
                            return usage();
                        }
                        String opt = args[i];
                        String val = args[++i];
                        String[] kv = val.split("=", 2);
                        if (opt.equals("--acls")) {
                            aclFile = val;
                            continue;
                        }
                        if (kv.length != 2) {
                            return usage();
                        }
                        switch (opt) {
                            case "--scram": users.put(kv[0], kv[1]); break;
                            case "--role": roles.put(kv[0], kv[1]); break;
                            case "--set": vars.put(kv[0], kv[1]); break;
                            default: return usage();
                        }
                        continue;
                    }
                    String[] spec = args[i].split(":", 2);
                    Map<String, String> configs = new LinkedHashMap<>();
                    if (spec.length == 2) {
                        for (String kv : spec[1].split(",")) {
                            String[] pair = kv.split("=", 2);
                            if (pair.length != 2) {
                                return usage();
                            }
                            configs.put(pair[0], pair[1]);
                        }
                    }
                    topics.put(spec[0], configs);
                }
            } else if (verb.equals("keystore")) {
                if (args.length != 5) {
                    return usage();
                }
            } else if (!verb.equals("ready")) {
                return usage();
            }
        } catch (NumberFormatException e) {
            return usage();
        }

        StackAdmin a = new StackAdmin(args[0], timeoutS);
        int failure = 1;
        try {
            System.out.println("cluster " + a.ready());
            if (verb.equals("ensure")) {
                failure = 3;
                List<AclBinding> bindings = aclFile == null ? List.of() : acls(aclFile, roles, vars);
                a.ensure(partitions, topics);
                a.scram(users);
                a.createAcls(bindings);
            } else if (verb.equals("keystore")) {
                failure = 3;
                a.keystore(args[3], args[4]);
            }
            return 0;
        } catch (Failure f) {
            System.err.println("StackAdmin " + verb + " " + args[0] + ": " + f.getMessage());
            return failure;
        } finally {
            a.admin.close(Duration.ofSeconds(2));
        }
    }

    public static void main(String[] args) throws InterruptedException {
        System.exit(run(args));
    }
}
