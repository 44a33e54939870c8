/**
 * The workflow editor's model, with no DOM (jest imports it): a draft is the body that POST and PUT
 * /v2/workflows take, kept as it was read. Each step stays the very object the API answered, extra
 * fields and their order included, and an operation changes only the fields it is about, so a
 * workflow opened and saved without a change goes back identical. Operations return a new draft;
 * the undo history keeps the old ones.
 *
 * The model is in four files: the draft and its reading (draft-model.ts), its changes
 * (draft-edits.ts), where an API message belongs (draft-messages.ts) and undo (draft-history.ts).
 */
export * from './draft-model';
export * from './draft-edits';
export * from './draft-messages';
export * from './draft-history';
