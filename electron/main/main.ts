// Electron main: the desktop composition root. One window with secure defaults (context
// isolation, sandbox, no Node in the page, CSP, no navigation, no new windows, external links to
// the OS browser), an application menu, and the Api served over IPC by the same CohortService
// that `cohort serve` uses. Everything else lives in core; this file only wires.
import { BrowserWindow, Menu, app, dialog, ipcMain, session, shell, type MenuItemConstructorOptions } from 'electron';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readClusterTimings } from '../core/cluster/client-timings';
import { SshCluster } from '../core/cluster/ssh-cluster';
import { resolvePaths } from '../core/paths';
import { CohortService } from '../core/service/cohort-service';
import { PassphrasePrompts } from '../core/service/passphrase-prompts';
import { KeyRing } from '../core/ssh';
import { wireIpc, type IpcWiring } from './ipc';
import { CSP, isAppUrl, isExternalLink } from './security';

const here = dirname(fileURLToPath(import.meta.url)); // dist/electron
const rendererIndex = pathToFileURL(join(here, '..', 'renderer', 'index.html')).href;
const preload = join(here, 'preload.cjs');
const isApp = (url: string) => isAppUrl(url, rendererIndex);

if (app.isPackaged) process.env.COHORT_TRAINER_DIR ??= join(process.resourcesPath, 'trainer');
app.enableSandbox();

let service: CohortService | undefined;
let wiring: IpcWiring | undefined;

function createWindow(): BrowserWindow {
  const win = new BrowserWindow({
    width: 1280,
    height: 800,
    minWidth: 1024,
    minHeight: 640,
    title: 'Cohort',
    show: false,
    webPreferences: {
      preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
    },
  });
  win.once('ready-to-show', () => win.show());
  const wc = win.webContents;
  // No navigation away from the app and no new windows; http(s) links open in the OS browser.
  wc.on('will-navigate', (e, url) => {
    if (!isApp(url)) e.preventDefault();
    if (isExternalLink(url)) void shell.openExternal(url);
  });
  wc.on('will-redirect', (e) => e.preventDefault());
  wc.setWindowOpenHandler(({ url }) => {
    if (isExternalLink(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  wc.on('will-attach-webview', (e) => e.preventDefault());
  wiring?.dispose();
  wiring = wireIpc({ ipcMain, target: wc, api: service!, isAppUrl: isApp });
  win.on('closed', () => wiring?.dispose());
  void win.loadURL(rendererIndex);
  return win;
}

function menu(): Menu {
  const template: MenuItemConstructorOptions[] = [
    ...(process.platform === 'darwin' ? [{ role: 'appMenu' as const }] : []),
    { label: 'File', submenu: [{ role: process.platform === 'darwin' ? 'close' : 'quit' }] },
    { role: 'editMenu' },
    {
      label: 'View',
      submenu: [{ role: 'reload' }, ...(app.isPackaged ? [] : [{ role: 'toggleDevTools' as const }]), { type: 'separator' }, { role: 'resetZoom' }, { role: 'zoomIn' }, { role: 'zoomOut' }, { type: 'separator' }, { role: 'togglefullscreen' }],
    },
    { role: 'windowMenu' },
    { role: 'help', submenu: [{ label: 'Cohort on GitHub', click: () => void shell.openExternal('https://github.com/') }] },
  ];
  return Menu.buildFromTemplate(template);
}

app.on('web-contents-created', (_e, contents) => {
  contents.on('will-attach-webview', (e) => e.preventDefault());
});

void app.whenReady().then(() => {
  // Strict CSP header for anything served through the session; the page also carries it as a meta tag (file://).
  session.defaultSession.webRequest.onHeadersReceived((details, cb) => cb({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } }));
  session.defaultSession.setPermissionRequestHandler((_wc, _perm, cb) => cb(false));
  // No remote content: only the app's own files load.
  session.defaultSession.webRequest.onBeforeRequest((details, cb) => cb({ cancel: !/^(file|devtools|data|blob):/.test(details.url) }));
  // The client's waits (COHORT_LOST_AFTER_MS, COHORT_SSH_KEEPALIVE_MS ...) from the environment, as the
  // CLI and `cohort serve` read them (core/cluster/client-timings.ts); a value it cannot use stops the
  // app with the variable named, as the CLI's usage error does. Electron main is not run by the tests
  // (no Electron binary on the test machines): electron/main/main-wiring.test.ts checks this wiring
  // in the source, and client-timings.test.ts what the function returns.
  const { options: timings, invalid } = readClusterTimings(process.env);
  if (invalid.length) {
    dialog.showErrorBox('Cohort cannot start', `${invalid.join('\n')}\n\nFix or unset it and start Cohort again.`);
    app.exit(2);
    return;
  }
  const passphrases = new PassphrasePrompts();
  service = new CohortService({ paths: resolvePaths(process.env), env: process.env, cluster: new SshCluster({ env: process.env, ...timings, keys: new KeyRing(passphrases.ask) }), passphrases });
  Menu.setApplicationMenu(menu());
  createWindow();
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow();
  });
});

app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit();
});

let quitting = false;
app.on('before-quit', (e) => {
  if (quitting || !service) return;
  // Stop following runs (they go on on their hosts; cancelling is the user's Stop) before exiting.
  e.preventDefault();
  quitting = true;
  wiring?.dispose();
  service.dispose();
  app.quit();
});
