/** Moved to auth/auth-storage.ts; kept so that existing imports of this path go on working. */
export * from "./auth/auth-storage.js";
