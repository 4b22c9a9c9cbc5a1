import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Real-thread and child-process tests load the built dist/ (npm test builds first).
    pool: "forks",
    // Provides pi for the session-file interop tests (see test/global-setup.ts).
    globalSetup: ["test/global-setup.ts"],
  },
});
