/** The security schemas live with the portfolio kind: engine/kinds/security-schemas.ts. */
export * from '../../engine/kinds/security-schemas';
