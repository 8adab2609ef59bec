export * from "../../bindings/cli/cluster.ts";
