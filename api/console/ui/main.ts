/**
 * The web console: a small single-page app over the /v2 API (hash routes, no framework). Every
 * element comes from dom.ts's `h`, which puts text on the page as text. This file is the entry:
 * which page each address shows; the pages live in pages/, the parts they share in parts/.
 */
import './styles.css';
import type { PageKit } from './page-kit';
import { auditPage, datastorePage, datastoresPage, filesPage, reportsPage } from './pages/data';
import { runPage, runsPage } from './pages/runs';
import { signInPage } from './pages/sign-in';
import { newTemplatePage, templatePage, templatesPage } from './pages/templates';
import { workflowPage, workflowsPage } from './pages/workflows';
import { errorBox, section } from './parts/elements';
import { field } from './parts/form-fields';
import { frame } from './parts/frame';
import { listTable } from './parts/table';
import { currentAddress, go, startRouter } from './router';
import { currentSession, currentWorkspace, resumeSession, whenRunChanges, whenSignedOut } from './session';

/** What the pages loaded on demand are lent (page-kit.ts). */
const kit: PageKit = { frame, workspace: currentWorkspace, go, field, section, listTable, errorBox };

async function route(): Promise<void> {
  whenRunChanges(null);
  if (!currentSession() && !(await resumeSession())) {
    signInPage();
    return;
  }
  const { parts, params } = currentAddress();
  // The editor (and its code editor) loads when first opened.
  if (parts[0] === 'workflows' && parts[1] === 'new')
    return (await import('./pages/workflow-editor')).workflowEditorPage(null, params);
  if (parts[0] === 'workflows' && parts[1] && parts[2] === 'edit')
    return (await import('./pages/workflow-editor')).workflowEditorPage(parts[1], params);
  if (parts[0] === 'workflows' && parts[1]) return workflowPage(parts[1]);
  if (parts[0] === 'runs' && parts[1] && parts[2]) return runPage(parts[1], parts[2]);
  if (parts[0] === 'runs') return runsPage(params);
  if (parts[0] === 'data' && parts[1] === 'datastores' && parts[2]) return datastorePage(parts[2], params);
  if (parts[0] === 'data' && parts[1] === 'files') return filesPage(params);
  if (parts[0] === 'data' && parts[1] === 'reports') return reportsPage(params);
  if (parts[0] === 'data' && parts[1] === 'audit') return auditPage(params);
  if (parts[0] === 'data') return datastoresPage(params);
  if (parts[0] === 'templates' && parts[1] === 'new') return newTemplatePage(params);
  if (parts[0] === 'templates' && parts[1]) return templatePage(parts[1]);
  if (parts[0] === 'templates') return templatesPage();
  // Loaded when first opened, as the code editor is: the first load stays small.
  if (parts[0] === 'integrations') {
    const pages = await import('./pages/integrations');
    if (parts[1] === 'new') return pages.integrationFormPage(kit, null);
    return parts[1] ? pages.integrationFormPage(kit, parts[1]) : pages.integrationsPage(kit);
  }
  if (parts[0] === 'secrets') return (await import('./pages/secrets')).secretsPage(kit);
  return workflowsPage();
}

whenSignedOut(signInPage);
startRouter(route);
