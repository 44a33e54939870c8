// The Worker's workflowsPath: every workflow type this task queue runs.
export { interpreterWorkflow, interpreterWorkflowV2 } from './interpreter-workflow';
export { scheduledLauncherWorkflow } from './scheduled-launcher-workflow';
export { scriptTrialWorkflow } from './script-trial-workflow';
