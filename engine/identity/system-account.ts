/**
 * The service's own account: it owns the built-in worker templates, which every account reads and
 * none may change. Created (marked `is_system`, without users or credentials) by the migration
 * 20261123010000_builtin_templates, which repeats this id.
 */
export const SYSTEM_ACCOUNT_ID = 'acct_ServiceBuiltinTemplates00';
