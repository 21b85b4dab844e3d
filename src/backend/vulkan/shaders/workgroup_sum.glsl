// A deterministic sum over the 64 invocations of a workgroup: a fixed binary tree in shared
// memory (no atomics, no subgroup operations whose order a driver may choose), so a value's
// bits depend only on the 64 partial sums, never on scheduling or on the subgroup size.
// The including shader declares local_size_x = 64.

shared float workgroup_partials[64];

// Every invocation must call it; every invocation gets the sum.
float workgroup_sum(float partial) {
  const uint lane = gl_LocalInvocationID.x;
  workgroup_partials[lane] = partial;
  barrier();
  for (uint stride = 32u; stride > 0u; stride >>= 1) {
    if (lane < stride) workgroup_partials[lane] += workgroup_partials[lane + stride];
    barrier();
  }
  const float sum = workgroup_partials[0];
  // Keeps a caller that sums again from overwriting [0] before everyone has read it.
  barrier();
  return sum;
}
