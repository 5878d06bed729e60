;;; fusion-switch.el --- Eglot setup for CANN fusion_switch.cfg files  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1") (eglot "1.9"))
;; Keywords: languages, tools

;;; Commentary:

;; A major mode for Ascend CANN `fusion_switch.cfg' files (derived from `js-mode', so JSON
;; highlighting and indentation work) and an Eglot entry that starts the fusion-switch
;; language server (`fusion-switch serve').  Put this file on your `load-path' and add:
;;
;;   (require 'fusion-switch)
;;   (add-hook 'fusion-switch-mode-hook #'eglot-ensure)
;;
;; Choose the target per project in .dir-locals.el:
;;
;;   ((fusion-switch-mode . ((fusion-switch-target . "Ascend950PR_9599"))))
;;
;; `fusion-switch-compare' runs in the background with its progress in the echo area
;; (`fusion-switch-cancel-compare' stops it); `fusion-switch-all-off' and
;; `fusion-switch-apply-suspects' ask (`y-or-n-p') before changing the file.
;;
;; Commands: `fusion-switch-compare', `fusion-switch-cancel-compare',
;; `fusion-switch-apply-suspects', `fusion-switch-all-off', `fusion-switch-restore',
;; `fusion-switch-show-report', `fusion-switch-reload-catalogue'.

;;; Code:

(require 'js)
(require 'eglot)
(require 'subr-x)
(require 'cl-lib)
(require 'json)

(defgroup fusion-switch nil
  "Editing and checking CANN fusion_switch.cfg files."
  :group 'languages
  :prefix "fusion-switch-")

(defcustom fusion-switch-server-command nil
  "Command that starts the language server over stdio, as a list of strings.
When nil, the environment variable FUSION_SWITCH_SERVER_CMD (split like a
shell command line) is used, else (\"fusion-switch\" \"serve\")."
  :type '(choice (const :tag "Default" nil) (repeat string)))

(defcustom fusion-switch-target ""
  "Target the configuration is for: a --soc_version such as Ascend950PR_9599,
or a product name such as Atlas 350.  Empty: no target-specific checks."
  :type 'string
  :safe #'stringp)

(defcustom fusion-switch-catalogue-extra-files nil
  "Extra rule catalogues (for example CANN fusion_config.json files)."
  :type '(repeat string)
  :safe (lambda (v) (and (listp v) (seq-every-p #'stringp v))))

(defcustom fusion-switch-compare-paths nil
  "Comparison inputs, relative to the project root, as a plist.
Keys: :onDump :offDump :onGraph :offGraph :output, :memoryBudget (4G, 512M),
:workers (comparing processes; 0 or unset: one per core), and :rank, :iteration and
:step (the dump folders' rank, iteration and training step, when they hold several)."
  :type 'plist
  :safe #'listp)

(defun fusion-switch--server-command ()
  "The server command: the option, else $FUSION_SWITCH_SERVER_CMD, else PATH."
  (or fusion-switch-server-command
      (let ((from-env (getenv "FUSION_SWITCH_SERVER_CMD")))
        (and from-env (not (string-blank-p from-env))
             (split-string-and-unquote from-env)))
      (list "fusion-switch" "serve")))

(defun fusion-switch--settings ()
  "The fusionSwitch settings section as a plist, from the options above."
  (list :fusionSwitch
        (list :target fusion-switch-target
              :catalogue (list :extraFiles (vconcat fusion-switch-catalogue-extra-files))
              :compare (cl-loop for key in '(:onDump :offDump :onGraph :offGraph :output
                                                 :memoryBudget :workers :rank :iteration :step)
                                collect key
                                collect (or (plist-get fusion-switch-compare-paths key) "")))))

(defun fusion-switch-workspace-configuration (&optional _server)
  "Value for `eglot-workspace-configuration' in fusion-switch buffers."
  (fusion-switch--settings))

(defclass fusion-switch-eglot-server (eglot-lsp-server) ()
  "The fusion-switch server: eglot plus work-done progress.")

(defun fusion-switch-eglot-contact (&optional _interactive)
  "Eglot contact: our server class, command and initializationOptions."
  (cons 'fusion-switch-eglot-server
        (append (fusion-switch--server-command)
                (list :initializationOptions (fusion-switch--settings)))))

(defvar fusion-switch-progress-functions nil
  "Called with (TOKEN KIND TEXT PERCENTAGE) on every $/progress.")

(defvar fusion-switch--progress nil
  "Running server tasks: alist TOKEN -> (TITLE MESSAGE PERCENTAGE CANCELLABLE).")

(cl-defmethod eglot-client-capabilities :around ((_s fusion-switch-eglot-server))
  "Declare `window.workDoneProgress' so the server reports the comparison's progress."
  (let* ((caps (cl-call-next-method))
         (window (plist-get caps :window)))
    (plist-put caps :window (plist-put window :workDoneProgress t))))

(cl-defmethod eglot-handle-request
  ((_s fusion-switch-eglot-server) (_m (eql window/workDoneProgress/create)) &key _token)
  "Accept the server's progress token."
  nil)

(cl-defmethod eglot-handle-notification
  ((_s fusion-switch-eglot-server) (_m (eql $/progress)) &key token value)
  "Show the server's progress in the echo area and remember it for cancelling."
  (let* ((kind (plist-get value :kind))
         (old (cdr (assoc token fusion-switch--progress)))
         (title (or (plist-get value :title) (nth 0 old) "fusion-switch"))
         (text (or (plist-get value :message) ""))
         (percentage (plist-get value :percentage))
         (cancellable (if (equal kind "begin") (eq (plist-get value :cancellable) t) (nth 3 old))))
    (setq fusion-switch--progress (assoc-delete-all token fusion-switch--progress))
    (unless (equal kind "end")
      (push (list token title text percentage cancellable) fusion-switch--progress))
    (let ((message-log-max nil))
      (message "%s: %s%s%s" title text
               (if percentage (format " %d%%" percentage) "")
               (if (equal kind "end") " (done)" "")))
    (run-hook-with-args 'fusion-switch-progress-functions token kind (or text title) percentage)))

;;;###autoload
(define-derived-mode fusion-switch-mode js-mode "FusionSwitch"
  "Major mode for CANN fusion_switch.cfg (strict JSON; no comments allowed)."
  (setq-local js-indent-level 2)
  (setq-local comment-start nil)
  (setq-local eglot-workspace-configuration #'fusion-switch-workspace-configuration))

;;;###autoload
(add-to-list 'auto-mode-alist '("/fusion_switch[^/]*\\.cfg\\'" . fusion-switch-mode))
;;;###autoload
(add-to-list 'auto-mode-alist '("\\.fusion_switch\\.cfg\\'" . fusion-switch-mode))

(add-to-list 'eglot-server-programs '(fusion-switch-mode . fusion-switch-eglot-contact))

(defun fusion-switch-execute (command &optional extra)
  "Run the server COMMAND on this buffer's configuration and return its result.
EXTRA is a plist merged into the argument object."
  (let ((server (eglot--current-server-or-lose)))
    (jsonrpc-request server :workspace/executeCommand
                     (list :command command
                           :arguments (vector (append (list :cfgUri (eglot--path-to-uri
                                                                    (buffer-file-name)))
                                                      extra))))))

(defmacro fusion-switch--define-command (name command doc &optional question)
  "Define interactive NAME running server COMMAND, documented by DOC.
With QUESTION, the user is asked (`y-or-n-p') first; a no changes nothing,
and a yes is not followed by eglot's own question about the edit."
  `(defun ,name ()
     ,doc
     (interactive)
     (when (or (null ,question) (y-or-n-p ,question))
       (let* ((eglot-confirm-server-initiated-edits
               (if ,question nil eglot-confirm-server-initiated-edits))
              (result (fusion-switch-execute ,command)))
         (when (called-interactively-p 'interactive)
           (message "%s: %s" ,command (if result (json-encode result) "done")))
         result))))

(defvar fusion-switch-compare-done-functions nil
  "Called with (RESULT ERROR) when an asynchronous comparison ends.")

(defun fusion-switch-compare ()
  "Compare the fusion-on and -off dumps named in the settings, in the background.
Progress is shown in the echo area; `fusion-switch-cancel-compare' stops it."
  (interactive)
  (fusion-switch--in-background "fusionSwitch.compare" nil
                                'fusion-switch-compare-done-functions 86400
                                "fusion-switch-cancel-compare"))

(defun fusion-switch--in-background (command extra hook timeout cancel)
  "Run the server COMMAND on this buffer's configuration without waiting for it.
EXTRA is a plist merged into the argument object; HOOK is run with
\(RESULT ERROR) when it ends, after TIMEOUT seconds at most; CANCEL names the
command that stops it."
  (let ((server (eglot--current-server-or-lose))
        (uri (eglot--path-to-uri (buffer-file-name))))
    (jsonrpc-async-request
     server :workspace/executeCommand
     (list :command command :arguments (vector (append (list :cfgUri uri) extra)))
     :success-fn (lambda (result)
                   (message "%s: %s" command (if result (json-encode result) "done"))
                   (run-hook-with-args hook result nil))
     :error-fn (lambda (error)
                 (message "%s failed: %s" command (plist-get error :message))
                 (run-hook-with-args hook nil error))
     :timeout-fn #'ignore
     :timeout timeout)
    (message "%s: started (M-x %s to stop)" command cancel)))

(defun fusion-switch-cancel-compare ()
  "Stop the running comparison (cancel its progress token, else ask the server)."
  (interactive)
  (let* ((server (eglot--current-server-or-lose))
         (running (seq-find (lambda (p) (and (nth 4 p) (stringp (car p))
                                             (string-prefix-p "fusionSwitch/compare/" (car p))))
                            fusion-switch--progress)))
    (if running
        (jsonrpc-notify server :window/workDoneProgress/cancel (list :token (car running)))
      (jsonrpc-async-request server :workspace/executeCommand
                             (list :command "fusionSwitch.cancelCompare"
                                   :arguments (vector (list :cfgUri (eglot--path-to-uri
                                                                     (buffer-file-name)))))
                             :success-fn #'ignore))
    (message "fusion-switch: cancelling the comparison")))

(defvar fusion-switch-bisect-done-functions nil
  "Called with (RESULT ERROR) when an asynchronous bisection ends.")

(defun fusion-switch-bisect (job &optional fusion-result)
  "Find the guilty fusion rules by running JOB with rules switched off.
It runs in the background.  JOB is a shell command line, `{cfg}' standing for
this file (saved first).  The candidates are the rules that fired per
FUSION-RESULT, a fusion_result.json; nil takes the one next to this file.
`fusion-switch-cancel-bisect' stops it and puts the file back."
  (interactive
   (list (read-shell-command "Bisect with the job ({cfg} is this file): ")
         (let ((file (read-file-name
                      "fusion_result.json (RET: the one next to this file): " nil "")))
           (unless (string-empty-p file) (expand-file-name file)))))
  ;; a shell command line, run by sh as typed (variables, pipes, quotes), {cfg} the trial's
  ;; path however it is quoted (the server's workflow.trials.shell_command)
  (fusion-switch--in-background "fusionSwitch.bisect"
                                (append (list :job job :shell t)
                                        (if fusion-result
                                            (list :fusionResult fusion-result)
                                          (list :allFired t)))
                                'fusion-switch-bisect-done-functions
                                604800  ; a week: each trial is a run of the job
                                "fusion-switch-cancel-bisect"))

(fusion-switch--define-command fusion-switch-cancel-bisect "fusionSwitch.cancelBisect"
  "Stop the running bisection; the configuration is put back.")
(fusion-switch--define-command fusion-switch-apply-suspects "fusionSwitch.applySuspects"
  "Switch the rules suspected by the last comparison off (asks first)."
  "Turn the suspected rules off in this file? ")
(fusion-switch--define-command fusion-switch-all-off "fusionSwitch.allOff"
  "Switch every fusion rule off (step 1 of the fusion-anomaly recipe; asks first)."
  "Switch all fusion off in this file (the current text is saved for restore)? ")
(defun fusion-switch-restore (&optional force)
  "Bring back the configuration from before `fusion-switch-all-off'.
When the file was edited since, eglot gives the server no way to ask (it declares no
window.showMessage): the server says so and this command asks, then replaces the edits
(they stay in the history).  With a prefix argument FORCE, it replaces them without asking."
  (interactive "P")
  (let* ((eglot-confirm-server-initiated-edits nil)
         (result (fusion-switch-execute "fusionSwitch.restore" (and force (list :force t))))
         (refused (and (listp result) (plist-get result :error))))
    (when (and refused (not force) (string-match-p "was edited since" refused)
               (y-or-n-p (concat (replace-regexp-in-string " Nothing was changed.*" "" refused)
                                 " Restore anyway? ")))
      (setq result (fusion-switch-execute "fusionSwitch.restore" (list :force t))))
    (when (called-interactively-p 'interactive)
      (message "fusionSwitch.restore: %s" (if result (json-encode result) "done")))
    result))
(fusion-switch--define-command fusion-switch-show-report "fusionSwitch.showReport"
  "Open the HTML report of the last comparison.")
(fusion-switch--define-command fusion-switch-reload-catalogue "fusionSwitch.reloadCatalogue"
  "Re-read the rule catalogues.")

(defun fusion-switch-set-target (target)
  "Set `fusion-switch-target' to TARGET for this buffer and tell the server."
  (interactive "sTarget (--soc_version or product, empty for none): ")
  (setq-local fusion-switch-target target)
  (eglot-signal-didChangeConfiguration (eglot--current-server-or-lose)))

(provide 'fusion-switch)
;;; fusion-switch.el ends here
