/** The shared field schemas live with the kinds that declare them: engine/store/field-schemas.ts. */
export * from '../../engine/store/field-schemas';
