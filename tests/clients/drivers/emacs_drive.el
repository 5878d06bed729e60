;;; emacs_drive.el --- drive Emacs + eglot through client-config/emacs/fusion-switch.el  -*- lexical-binding: t; -*-
;; Loaded after the user's init file: open the configuration as C-x C-f would, wait for flymake
;; diagnostics, complete at a position, run a server command, write JSON to $FUSION_SWITCH_TEST_OUT.
(require 'json)
(require 'flymake)
(require 'cl-lib)

(defun drive--wait (seconds predicate)
  "Process events until PREDICATE holds or SECONDS pass; return PREDICATE's last value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(defun drive--codes ()
  (mapcar (lambda (d)
            (let ((text (flymake-diagnostic-text d)))
              (and (string-match "\\[\\([a-z-]+\\)\\]" text) (match-string 1 text))))
          (flymake-diagnostics)))

(let* ((cfg (getenv "FUSION_SWITCH_TEST_CFG"))
       (wanted (split-string (getenv "FUSION_SWITCH_TEST_CODES") ","))
       (line (string-to-number (getenv "FUSION_SWITCH_TEST_LINE")))
       (column (string-to-number (getenv "FUSION_SWITCH_TEST_CHAR")))
       (result '()))
  (find-file cfg)
  ;; The command loop runs post-command-hook after C-x C-f; that is where eglot-ensure connects.
  (run-hooks 'post-command-hook)
  (push (cons 'major_mode (symbol-name major-mode)) result)
  (push (cons 'settings (json-encode (fusion-switch--settings))) result)
  (push (cons 'connected (and (drive--wait 20 #'eglot-current-server) t)) result)
  (push (cons 'all_codes_arrived
              (and (drive--wait 20 (lambda ()
                                     (let ((codes (drive--codes)))
                                       (seq-every-p (lambda (c) (member c codes)) wanted))))
                   t))
        result)
  (push (cons 'diagnostics
              (vconcat
               (mapcar (lambda (d)
                         `((line . ,(1- (line-number-at-pos (flymake-diagnostic-beg d))))
                           (type . ,(symbol-name (flymake-diagnostic-type d)))
                           (text . ,(flymake-diagnostic-text d))))
                       (flymake-diagnostics))))
        result)
  (goto-char (point-min))
  (forward-line line)
  (forward-char column)
  (let ((capf (eglot-completion-at-point)))
    (push (cons 'completion (vconcat (and capf (all-completions "" (nth 2 capf))))) result))
  (let ((reply (fusion-switch-reload-catalogue)))
    (push (cons 'command_rules (plist-get reply :rules)) result)
    (push (cons 'command_target (plist-get reply :target)) result))
  ;; M-x fusion-switch-set-target sends workspace/didChangeConfiguration; A2 has UB fusion.
  (fusion-switch-set-target "Ascend910B1")
  (push (cons 'retargeted
              (and (drive--wait 10 (lambda ()
                                     (let ((codes (drive--codes)))
                                       (and (member "unknown-rule" codes)
                                            (not (member "ub-unsupported-on-target" codes))))))
                   t))
        result)
  ;; M-x fusion-switch-restore after an edit made since all-off: eglot does not declare
  ;; window.showMessage, so the server cannot ask; the command asks itself and forces (it was
  ;; refused with no way to force it: a review)
  (let ((before (buffer-string)))
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
      (fusion-switch-all-off)
      (goto-char (point-max))
      (insert "\n")
      (eglot--signal-textDocument/didChange)
      (push (cons 'restore_after_edit
                  (condition-case err
                      (let ((answer (fusion-switch-restore)))
                        (if (equal (buffer-string) before) "restored"
                          (format "not restored: %S %S %S" answer before (buffer-string))))
                    (error (error-message-string err))))
            result)))
  ;; M-x fusion-switch-cancel-compare leaves a running bisection alone (it cancelled the first
  ;; cancellable progress token of any kind: a review)
  (let ((sent nil)
        (fusion-switch--progress (list (list "fusionSwitch/bisect/test" "bisect" "" nil t))))
    (cl-letf (((symbol-function 'jsonrpc-notify)
               (lambda (_server _method params) (push (or (plist-get params :token) "") sent)))
              ((symbol-function 'jsonrpc-async-request) #'ignore))
      (fusion-switch-cancel-compare))
    (push (cons 'cancel_compare_tokens (vconcat sent)) result))
  (push (cons 'server_command (vconcat (process-command (jsonrpc--process (eglot-current-server)))))
        result)
  (push (cons 'modes
              (mapcar (lambda (name)
                        (cons name (let ((mode (assoc-default (concat "/project/" name)
                                                              auto-mode-alist #'string-match)))
                                     (if (symbolp mode) (symbol-name mode) "other"))))
                      (split-string (getenv "FUSION_SWITCH_TEST_NAMES") ",")))
        result)
  (with-temp-file (getenv "FUSION_SWITCH_TEST_OUT")
    (insert (json-encode result)))
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (kill-emacs 0))
