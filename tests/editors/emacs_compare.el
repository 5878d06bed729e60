;;; emacs_compare.el --- Emacs + eglot runs fusionSwitch.compare through fusion-switch.el  -*- lexical-binding: t; -*-
;; Loaded after the user's init.  Inputs: FS_FILE, FS_ON_DUMP ... FS_OUTPUT; writes JSON to FS_OUT.
(require 'json)

(defun drive--wait (seconds predicate)
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(let ((result '()) (events '()) (done nil) (done-result nil) (done-error nil) (questions '()))
  (setq fusion-switch-compare-paths
        (list :onDump (getenv "FS_ON_DUMP") :offDump (getenv "FS_OFF_DUMP")
              :onGraph (getenv "FS_ON_GRAPH") :offGraph (getenv "FS_OFF_GRAPH")
              :output (getenv "FS_OUTPUT")))
  (add-hook 'fusion-switch-progress-functions
            (lambda (_token kind _text percentage) (push (list kind percentage) events)))
  (add-hook 'fusion-switch-compare-done-functions
            (lambda (res err) (setq done t done-result res done-error err)))
  (find-file (getenv "FS_FILE"))
  (run-hooks 'post-command-hook)
  (push (cons 'connected (and (drive--wait 30 #'eglot-current-server) t)) result)
  ;; 1. an asynchronous comparison: the command returns at once, progress arrives, then the result
  (fusion-switch-compare)
  (push (cons 'returned_before_done (not done)) result)
  (push (cons 'finished (and (drive--wait 120 (lambda () done)) t)) result)
  (push (cons 'events (vconcat (mapcar (lambda (e) (vconcat e)) (reverse events)))) result)
  (push (cons 'compare_result (json-encode done-result)) result)
  (push (cons 'compare_error (and done-error (plist-get done-error :message))) result)
  ;; 2. cancel: start again and cancel as soon as the server reports a cancellable task
  (setq done nil done-result nil events nil)
  (fusion-switch-compare)
  (drive--wait 60 (lambda () (or done (seq-find (lambda (p) (nth 4 p)) fusion-switch--progress))))
  (push (cons 'cancellable_seen (and (seq-find (lambda (p) (nth 4 p)) fusion-switch--progress) t))
        result)
  (fusion-switch-cancel-compare)
  (drive--wait 60 (lambda () done))
  (push (cons 'cancel_result (json-encode done-result)) result)
  ;; 2b. bisect: the job is asked for (it sent none: a review), the run is asynchronous, and
  ;; the candidates are the rules fired per the fusion_result.json next to the file
  (let ((bisected nil) (bisect-result nil) (bisect-error nil))
    (add-hook 'fusion-switch-bisect-done-functions
              (lambda (res err) (setq bisected t bisect-result res bisect-error err)))
    (cl-letf (((symbol-function 'read-shell-command) (lambda (&rest _) (getenv "FS_BISECT_JOB")))
              ((symbol-function 'read-file-name) (lambda (&rest _) "")))
      (call-interactively #'fusion-switch-bisect))
    (push (cons 'bisect_returned_before_done (not bisected)) result)
    ;; eglot asks before the server's edit of the result, and Emacs whether to reread the
    ;; file the trials wrote: the user says yes, and no (the server's edit makes it the same)
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t))
              ((symbol-function 'yes-or-no-p) #'ignore)
              ((symbol-function 'ask-user-about-supersession-threat) #'ignore))
      (drive--wait 120 (lambda () bisected)))
    (push (cons 'bisect_result (json-encode bisect-result)) result)
    (push (cons 'bisect_error (and bisect-error (plist-get bisect-error :message))) result)
    (drive--wait 10 (lambda () (string-match-p "\"ConvBatchnormFusionPass\": \"off\""
                                                (buffer-string))))
    (push (cons 'bisect_buffer (buffer-string)) result)
    (revert-buffer t t)  ; the file the bisection wrote is the buffer's text: in sync again
    (push (cons 'server_log  ; the server's messages, for a failure's report
                (let ((log (with-current-buffer (jsonrpc-events-buffer (eglot-current-server))
                             (buffer-string))))
                  (substring log (max 0 (- (length log) 6000)))))
          result))
  ;; 3. all-off asks: a "no" leaves the buffer as it is, a "yes" switches everything off
  (let ((before (buffer-string)))
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (q) (push q questions) nil)))
      (fusion-switch-all-off))
    (drive--wait 2 (lambda () nil))
    (push (cons 'unchanged_after_no (equal before (buffer-string))) result)
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (q) (push q questions) t)))
      (fusion-switch-all-off))
    (drive--wait 10 (lambda () (string-match-p "\"ALL\": \"off\"" (buffer-string))))
    (push (cons 'all_off_after_yes (and (string-match-p "\"ALL\": \"off\"" (buffer-string)) t))
          result))
  (push (cons 'questions (vconcat (reverse questions))) result)
  (with-temp-file (getenv "FS_OUT")
    (insert (json-encode result)))
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (kill-emacs 0))
