// The scenarios of issue 6 as data: how each shapes the session (generator options), the
// server (cache_config overrides, restarts) and which checks its cache-on run must pass.
// A run is one session against one server configuration; a scenario has a cache-on run, a
// cache-off run (both tiers false, the cold baseline) and, for interval-flood, the clean run
// whose hit rate it must equal.

export const SCENARIO_NAMES = ['clean', 'timestamp', 'interrupt', 'interval-flood', 'restart',
  'regenerate'];

export function scenarioPlan(name, o) {
  const plan = { name, generator: {}, restartEvery: 0, maxTokens: o.maxTokens, runs: [],
    checks: ['warm-hits'] };
  const cacheOn = { memory_prefix_cache: true, disk_kv_cache: true };
  const on = { key: 'on', label: 'cache on', cache: cacheOn, checked: true };
  switch (name) {
    case 'clean':
      break;
    case 'timestamp':
      plan.generator.timestamp = true;
      plan.checks = ['timestamp-divergence'];
      break;
    case 'interrupt':
      plan.generator.interruptEvery = o.interruptEvery;
      plan.generator.interruptAfter = o.interruptAfter;
      break;
    case 'interval-flood':
      plan.maxTokens = o.floodMaxTokens;
      if (!o.qmlx) {
        // A running server keeps its own configuration, and a clean run before the flood
        // would leave the whole session in its cache: only the flood run is meaningful.
        plan.checks = ['warm-hits'];
        on.label = 'cache on (server\'s own interval and cap)';
        break;
      }
      plan.runs.push({ key: 'clean', label: 'clean, cache on', cache: cacheOn, baseline: true });
      on.label = `flood (interval ${o.floodInterval}, cap ${o.floodDiskGb} GB)`;
      on.cache = { ...cacheOn, checkpoint_interval_tokens: o.floodInterval,
        disk_cache_max_gb: o.floodDiskGb };
      plan.checks = ['warm-hits', 'same-hit-rate'];
      break;
    case 'restart':
      plan.restartEvery = o.restartEvery;
      break;
    case 'regenerate':
      plan.generator.regenerateEvery = o.regenerateEvery;
      break;
    default:
      throw new Error(`unknown scenario '${name}' (one of ${SCENARIO_NAMES.join(', ')})`);
  }
  if (o.cache !== 'off') plan.runs.push(on);
  if (o.cache !== 'on') {
    plan.runs.push({ key: 'off', label: 'cache off',
      cache: { memory_prefix_cache: false, disk_kv_cache: false } });
  }
  return plan;
}
