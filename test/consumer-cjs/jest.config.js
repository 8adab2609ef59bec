// pg-logical-replication's own Jest settings that matter here: a node environment, one worker.
module.exports = {
  testEnvironment: "node",
  maxWorkers: 1,
};
